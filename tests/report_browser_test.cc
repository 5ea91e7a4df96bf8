// The HTML report in a real browser: headless Chromium (Debian's `chromium`) loads a report of a
// synthetic study with networking disabled; the test fails on any console message (our page has
// no script, so any is an error or a blocked fetch) and on any request the page makes (from
// Chromium's net log). A control page that does fetch proves both checks can fail.
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "results/report_files.h"
#include "reports/compare_report.h"
#include "reports/html_report.h"
#include "reports/study_report.h"
#include "tests/synthetic_study.h"
#include "tests/test_util.h"

namespace sweep {
namespace {

namespace fs = std::filesystem;
using testing::ReadAll;
using testing::TempDir;

std::string FindChromium() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(std::string(path ? path : "") + ":/usr/bin:/usr/local/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    for (const char* name : {"chromium", "chromium-browser"}) {
      fs::path candidate = fs::path(dir) / name;
      if (!dir.empty() && fs::exists(candidate)) return candidate.string();
    }
  }
  return "";
}

struct BrowserRun {
  int status = -1;
  std::string out, err;
  std::vector<std::string> console;        // the page's console messages, CSP violations included
  std::vector<std::string> page_requests;  // URLs the page asked the network for
};

// Runs Chromium once on `file` with a fresh profile; `action` is --dump-dom or --screenshot=PNG.
BrowserRun RunChromium(const std::string& chromium, const TempDir& dir, const std::string& file,
                       const std::string& action, int width = 1280) {
  static int runs = 0;
  std::string tag = std::to_string(++runs);
  std::string profile = dir.file("profile-" + tag), netlog = dir.file("net-" + tag + ".json");
  std::string out = dir.file("out-" + tag + ".txt"), err = dir.file("err-" + tag + ".txt");
  fs::create_directories(profile);
  // Every host resolves to nothing, so neither the page nor Chromium's own background services
  // can reach the network even if a check below were wrong; the net log still records attempts.
  std::string cmd = "timeout 120 '" + chromium +
                    "' --headless --no-sandbox --disable-gpu --disable-quic --no-first-run"
                    " --disable-background-networking --disable-component-update --disable-sync"
                    " --host-resolver-rules='MAP * ~NOTFOUND' --user-data-dir='" +
                    profile + "' --enable-logging=stderr --v=0 --log-net-log='" + netlog +
                    "' --window-size=" + std::to_string(width) + ",2000 --hide-scrollbars " + action + " 'file://" +
                    file + "' >'" + out + "' 2>'" + err + "' </dev/null";
  BrowserRun run;
  int rc = std::system(cmd.c_str());
  run.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  run.out = ReadAll(out);
  run.err = ReadAll(err);
  std::stringstream lines(run.err);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.find(":CONSOLE") != std::string::npos || line.find("Refused to") != std::string::npos ||
        line.find("net::ERR_") != std::string::npos || line.find("Uncaught") != std::string::npos) {
      run.console.push_back(line);
    }
  }
  // Requests made on behalf of a file:// page carry that origin in their isolation key; the
  // browser's own (update checks and the like) do not.
  auto log = nlohmann::json::parse(ReadAll(netlog), nullptr, false);
  REQUIRE(log.is_object());
  int start_job = -1;
  for (const auto& [name, id] : log["constants"]["logEventTypes"].items()) {
    if (name == "URL_REQUEST_START_JOB") start_job = id.get<int>();
  }
  REQUIRE(start_job >= 0);
  for (const auto& e : log["events"]) {
    if (e.value("type", -1) != start_job || !e.contains("params")) continue;
    const auto& p = e["params"];
    std::string url = p.value("url", ""), key = p.value("network_isolation_key", "");
    if (url.empty() || url.starts_with("file:") || url.starts_with("data:")) continue;
    if (key.find("file://") != std::string::npos) run.page_requests.push_back(url);
  }
  return run;
}

std::string Chromium() {
  std::string chromium = FindChromium();
  if (chromium.empty()) {
    FAIL(
        "chromium not found in PATH: the browser test needs Debian's `chromium` package "
        "(scripts/setup.sh installs it; or: apt-get install -y --no-install-recommends chromium)");
  }
  return chromium;
}

TEST_CASE("The report loads in headless Chromium with no console message and no request", "[browser]") {
  std::string chromium = Chromium();
  TempDir dir;
  auto store = store::Store::Open(dir.file("study.db"));
  REQUIRE(store.ok());
  study::Study study = testing::SyntheticStudy();
  testing::SyntheticOptions options;
  options.trials = 40;
  options.hostile_value = "</script><img src=x onerror=alert(1)>";
  int64_t id = testing::FillSyntheticStudy(**store, study, options);
  std::string html = dir.file("report.html");
  results::ReportOptions report_options;
  report_options.version = "test";
  REQUIRE(results::WriteReports(**store, study, id, html, "", options.now, report_options).ok());

  BrowserRun dom = RunChromium(chromium, dir, html, "--dump-dom");
  INFO("chromium stderr:\n" << dom.err);
  REQUIRE(dom.status == 0);
  REQUIRE(dom.console.empty());
  REQUIRE(dom.page_requests.empty());
  // It rendered our page, and the hostile parameter value is text, not an element.
  REQUIRE(dom.out.find("<h2>Recommendation</h2>") != std::string::npos);
  REQUIRE(dom.out.find("<svg class=\"chart\"") != std::string::npos);
  REQUIRE(dom.out.find("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;") != std::string::npos);
  REQUIRE(dom.out.find("<img") == std::string::npos);
  REQUIRE(dom.out.find("<script") == std::string::npos);

  std::string png = dir.file("report.png");
  BrowserRun shot = RunChromium(chromium, dir, html, "--screenshot='" + png + "'");
  INFO("chromium stderr:\n" << shot.err);
  REQUIRE(shot.status == 0);
  REQUIRE(shot.console.empty());
  REQUIRE(shot.page_requests.empty());
  std::string bytes = ReadAll(png);
  REQUIRE(bytes.size() > 20'000);  // a blank page is a few kB
  REQUIRE(bytes.starts_with("\x89PNG\r\n\x1a\n"));
}

// Loads `html` (the DOM, then a screenshot): no console message, no request, our page drawn.
void CheckRendersCleanly(const std::string& chromium, const TempDir& dir, const std::string& html,
                         const std::string& expected_heading) {
  BrowserRun dom = RunChromium(chromium, dir, html, "--dump-dom");
  INFO("chromium stderr:\n" << dom.err);
  REQUIRE(dom.status == 0);
  REQUIRE(dom.console.empty());
  REQUIRE(dom.page_requests.empty());
  REQUIRE(dom.out.find(expected_heading) != std::string::npos);
  REQUIRE(dom.out.find("<svg class=\"chart\"") != std::string::npos);
  REQUIRE(dom.out.find("<img") == std::string::npos);
  REQUIRE(dom.out.find("<script") == std::string::npos);
  std::string png = html + ".png";
  BrowserRun shot = RunChromium(chromium, dir, html, "--screenshot='" + png + "'");
  INFO("chromium stderr:\n" << shot.err);
  REQUIRE(shot.status == 0);
  REQUIRE(shot.console.empty());
  REQUIRE(shot.page_requests.empty());
  REQUIRE(ReadAll(png).size() > 20'000);
}

TEST_CASE("A hyperparameter study's report and a comparison load cleanly in headless Chromium", "[browser]") {
  std::string chromium = Chromium();
  TempDir dir;
  // The synthetic study without its throughput knob (micro_batch_size): a hyperparameter study,
  // lr sampled on a log scale; a hostile optimizer value.
  study::Study hpo = testing::SyntheticStudy();
  hpo.space.erase(hpo.space.begin());
  hpo.space[0].log = true;
  testing::SyntheticOptions options;
  options.trials = 40;
  options.hostile_value = "</script><img src=x onerror=alert(1)>";
  auto store = store::Store::Open(dir.file("hpo.db"));
  REQUIRE(store.ok());
  int64_t id = testing::FillSyntheticStudy(**store, hpo, options);
  results::ReportOptions report_options;
  report_options.version = "test";
  auto report = results::CollectReport(**store, hpo, id, report_options, options.now);
  REQUIRE(report.ok());
  // The synthetic trials still run at their micro-batch size's speed: made one speed, it is a
  // hyperparameter study by measurement (issue 41).
  for (auto& t : report->trials) {
    if (t.iters_per_s) t.iters_per_s = 2.0;
  }
  reports::ClassifyBySpeed(*report, reports::StudyKind::kPerformance, "guess");
  REQUIRE(report->meta.kind == reports::StudyKind::kHyperparameter);
  std::string html = dir.file("hpo.html");
  testing::WriteAll(html, reports::RenderHtmlReport(*report));
  CheckRendersCleanly(chromium, dir, html, "ahead of the runner-up");
  std::string page = ReadAll(html);
  REQUIRE(page.find("<section id=\"parallel\"") != std::string::npos);
  REQUIRE(page.find("<section id=\"importance\"") != std::string::npos);
  REQUIRE(page.find("<section id=\"best-so-far\"") != std::string::npos);

  // Two studies side by side: the synthetic study and a copy of it.
  study::Study other = testing::SyntheticStudy();
  other.name = "synthetic-h200";
  auto store2 = store::Store::Open(dir.file("other.db"));
  REQUIRE(store2.ok());
  int64_t id2 = testing::FillSyntheticStudy(**store2, other, options);
  reports::Comparison c;
  c.version = "test";
  c.generated_at = options.now;
  study::Study first = testing::SyntheticStudy();
  auto store1 = store::Store::Open(dir.file("first.db"));
  int64_t id1 = testing::FillSyntheticStudy(**store1, first, options);
  for (auto [s, st, sid] : {std::tuple{&first, store1->get(), id1}, std::tuple{&other, store2->get(), id2}}) {
    auto r = results::CollectReport(*st, *s, sid, report_options, options.now);
    REQUIRE(r.ok());
    reports::ComparedStudy cs;
    cs.report = std::move(*r);
    cs.analysis = reports::Analyze(cs.report);
    c.studies.push_back(std::move(cs));
  }
  std::string compare = dir.file("compare.html");
  testing::WriteAll(compare, reports::RenderCompareHtml(c));
  CheckRendersCleanly(chromium, dir, compare, "Best configuration of each study");
}

// Measures the page's layout in Chromium at 1280 px: a copy of the report without its policy (so a
// script may run) gets a script that lists what runs out of its place into <pre id="layout">: a
// page wider than the window, a section (card) that scrolls sideways or a table (outside the
// ranking's own scrolling wrapper) wider than its card, and a bar chart's label or value outside
// its chart. Returns the list as JSON.
nlohmann::json LayoutProblems(const std::string& chromium, const TempDir& dir, const std::string& html,
                              int width = 1280) {
  std::string page = ReadAll(html);
  const std::string csp =
      std::string("<meta http-equiv=\"Content-Security-Policy\" content=\"") + reports::kReportCsp + "\">";
  size_t at = page.find(csp);
  REQUIRE(at != std::string::npos);
  page.erase(at, csp.size());
  const std::string script = R"js(<script>
var bad = [];
var de = document.documentElement;
if (de.scrollWidth > de.clientWidth) bad.push('page: ' + de.scrollWidth + ' > ' + de.clientWidth);
document.querySelectorAll('section').forEach(function (s) {
  var r = s.getBoundingClientRect();
  if (s.scrollWidth > s.clientWidth) bad.push(s.id + ' scrolls: ' + s.scrollWidth + ' > ' + s.clientWidth);
  s.querySelectorAll('.table-wrap').forEach(function (w) {
    var wr = w.getBoundingClientRect();
    if (wr.right > r.right + 0.5) bad.push(s.id + ' table box: ' + wr.right + ' > ' + r.right);
    if (w.dataset.fold !== undefined && w.scrollWidth > w.clientWidth)
      bad.push(s.id + ' table cut: ' + w.scrollWidth + ' > ' + w.clientWidth);
  });
  s.querySelectorAll('table').forEach(function (t) {
    if (t.closest('.table-wrap')) return;
    var tr = t.getBoundingClientRect();
    if (tr.right > r.right + 0.5) bad.push(s.id + ' table: ' + tr.right + ' > ' + r.right);
  });
});
document.querySelectorAll('svg.chart').forEach(function (svg) {
  var w = svg.viewBox.baseVal.width;
  svg.querySelectorAll('text.bar-value, text.bar-label').forEach(function (t) {
    var b = t.getBBox();
    if (b.x < -0.5 || b.x + b.width > w + 0.5) bad.push('bar text "' + t.textContent + '": ' + b.x + ' + ' + b.width + ' > ' + w);
  });
});
var out = document.createElement('pre');
out.id = 'layout';
out.textContent = JSON.stringify(bad);
document.body.appendChild(out);
</script>)js";
  at = page.rfind("</body>");
  REQUIRE(at != std::string::npos);
  page.insert(at, script);
  std::string measured = html + ".layout.html";
  testing::WriteAll(measured, page);
  BrowserRun dom = RunChromium(chromium, dir, measured, "--dump-dom", width);
  INFO("chromium stderr:\n" << dom.err);
  REQUIRE(dom.status == 0);
  REQUIRE(dom.console.empty());
  size_t open = dom.out.find("<pre id=\"layout\">");
  REQUIRE(open != std::string::npos);  // the script ran
  open += std::string("<pre id=\"layout\">").size();
  std::string text = dom.out.substr(open, dom.out.find("</pre>", open) - open);
  // The DOM dump escapes the text: only &amp; &lt; &gt; can occur in it.
  for (auto [from, to] : {std::pair{"&lt;", "<"}, std::pair{"&gt;", ">"}, std::pair{"&amp;", "&"}}) {
    const std::string f = from;
    for (size_t k = text.find(f); k != std::string::npos; k = text.find(f, k + 1)) text.replace(k, f.size(), to);
  }
  auto problems = nlohmann::json::parse(text, nullptr, false);
  REQUIRE(problems.is_array());
  return problems;
}

TEST_CASE("At 1280 px the Stopped early table and the importance bars stay inside their cards", "[browser]") {
  // Issue 31: the "Stopped early" table ran out of its card (the reasons cut off, a horizontal
  // scrollbar), and so did the importance bar's label at 98%.
  std::string chromium = Chromium();
  TempDir dir;
  study::Study hpo = testing::SyntheticStudy();
  hpo.space.erase(hpo.space.begin());
  hpo.space[0].log = true;
  testing::SyntheticOptions options;
  options.trials = 40;
  auto store = store::Store::Open(dir.file("hpo.db"));
  REQUIRE(store.ok());
  int64_t id = testing::FillSyntheticStudy(**store, hpo, options);
  results::ReportOptions report_options;
  report_options.version = "test";
  auto report = results::CollectReport(**store, hpo, id, report_options, options.now);
  REQUIRE(report.ok());
  // A median rule's reason as long as real ones get, and a value that lr decides alone.
  int pruned = 0;
  for (size_t i = 0; i < report->trials.size(); ++i) {
    auto& t = report->trials[i];
    if (t.state == "pruned") {
      ++pruned;
      t.reason =
          "pruned by the median rule: at t=183.4s: smoothed loss 0.5812 is worse than the median 0.4127 of the 9 "
          "trials that had run as long (min_trials 5, warmup 60s, interval 30s); compared at the same training "
          "time, not the same step, as the trials run at different speeds; the trial's best was 0.5790 at t=170.2s";
    }
    if ((t.state == "completed" || t.state == "pruned") && t.final_value) {
      // The same value all along: importance compares the pruned trials at equal step, on the curves.
      t.final_value = std::log10(t.param_values[0].Number().value_or(1)) + 0.02 * static_cast<double>(i % 4);
      for (auto& p : t.curve) p.value = *t.final_value;
    }
  }
  REQUIRE(pruned >= 1);
  auto imp = reports::ParamImportances(*report);
  REQUIRE(!imp.params.empty());
  REQUIRE(imp.params[0].share > 0.9);
  std::string html = dir.file("layout.html");
  testing::WriteAll(html, reports::RenderHtmlReport(*report));
  std::string page = ReadAll(html);
  REQUIRE(page.find("<h3>Stopped early</h3>") != std::string::npos);
  nlohmann::json problems = LayoutProblems(chromium, dir, html);
  INFO(problems.dump(1));
  CHECK(problems.empty());
}

TEST_CASE("A study with repeats reads well at 900 and 1400 px: nothing runs out of its card", "[browser]") {
  // Issue 41: at 900 px the ranking table cut off its last columns. The synthetic study, its trials
  // made three seeds of each configuration (the configurations' values, a seed column), ranked.
  std::string chromium = Chromium();
  TempDir dir;
  study::Study study = testing::SyntheticStudy();
  testing::SyntheticOptions options;
  options.trials = 36;
  auto store = store::Store::Open(dir.file("repeats.db"));
  REQUIRE(store.ok());
  int64_t id = testing::FillSyntheticStudy(**store, study, options);
  results::ReportOptions report_options;
  report_options.version = "test";
  auto report = results::CollectReport(**store, study, id, report_options, options.now);
  REQUIRE(report.ok());
  report->meta.param_names.push_back("seed");
  std::vector<reports::TrialRow> rows;
  for (size_t i = 0; i < report->trials.size(); ++i) {
    auto& t = report->trials[i];
    t.param_values = report->trials[i - i % 3].param_values;
    t.param_values.resize(report->meta.param_names.size() - 1);
    t.param_values.push_back(ParamCell(static_cast<int64_t>(i % 3)));
    reports::TrialRow row;
    row.trial_key = t.key;
    row.param_values = t.param_values;
    row.state = t.state;
    row.objective_value = t.final_value;
    row.iters_per_s = t.iters_per_s;
    rows.push_back(row);
  }
  report->configs = reports::RankConfigurations(report->meta.param_names, rows, "seed", true);
  report->baseline = 0;
  report->baseline_named = true;
  report->configs->baseline = reports::GroupOfRow(*report->configs, 0);
  std::string html = dir.file("repeats.html");
  std::string page = reports::RenderHtmlReport(*report);
  REQUIRE(page.find("<section id=\"configurations\">") != std::string::npos);
  // The two tables of decisions must fold, not scroll: the check measures them.
  for (const char* table : {"<section id=\"configurations\">", "<section id=\"ranking\">"}) {
    size_t at = page.find(table);
    REQUIRE(at != std::string::npos);
    at = page.find("<div class=\"table-wrap\"", at);
    page.insert(at + std::string("<div class=\"table-wrap\"").size(), " data-fold");
  }
  testing::WriteAll(html, page);
  CheckRendersCleanly(chromium, dir, html, "Configurations over seeds");
  for (int width : {900, 1400}) {
    nlohmann::json problems = LayoutProblems(chromium, dir, html, width);
    INFO(width << " px: " << problems.dump(1));
    CHECK(problems.empty());
  }
}

TEST_CASE("The browser checks catch a page that fetches", "[browser]") {
  std::string chromium = Chromium();
  TempDir dir;
  const std::string fetching = R"(<!DOCTYPE html><html><head><meta charset="utf-8">{}</head>
<body><p>control</p><img src="http://report-test.invalid/pixel.png"></body></html>)";
  auto page = [&](const std::string& head) {
    std::string text = fetching;
    text.replace(text.find("{}"), 2, head);
    return text;
  };

  // Without a policy the request goes out (and fails): the net log shows it.
  testing::WriteAll(dir.file("open.html"), page(""));
  BrowserRun open = RunChromium(chromium, dir, dir.file("open.html"), "--dump-dom");
  REQUIRE(open.status == 0);
  REQUIRE(open.page_requests == std::vector<std::string>{"http://report-test.invalid/pixel.png"});

  // With the report's policy it is blocked, and Chromium says so on the console.
  testing::WriteAll(dir.file("csp.html"), page(std::string("<meta http-equiv=\"Content-Security-Policy\" content=\"") +
                                               reports::kReportCsp + "\">"));
  BrowserRun blocked = RunChromium(chromium, dir, dir.file("csp.html"), "--dump-dom");
  REQUIRE(blocked.status == 0);
  REQUIRE(blocked.page_requests.empty());
  REQUIRE(!blocked.console.empty());
}

}  // namespace
}  // namespace sweep
