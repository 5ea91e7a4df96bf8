// Tests of the HTML report on plain data: everything from the study is escaped, the page fetches
// nothing, the headline shows the decomposition, and the charts and number formats behave.
#include "reports/html_report.h"

#include <catch2/catch.hpp>
#include <regex>
#include <string>

#include "reports/html_text.h"
#include "reports/svg_chart.h"

namespace sweep::reports {
namespace {

// A trial's parameter values as the application hands them over (typed, shown as the template shows them).
std::vector<ParamCell> Cells(std::initializer_list<ParamValue> values) {
  return std::vector<ParamCell>(values.begin(), values.end());
}

const std::string kHostile = "</script><img src=x onerror=alert(1)>";

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TrialSummary Completed(int64_t id, double loss, double ips, int64_t steps_to_target) {
  TrialSummary t;
  t.id = id;
  t.key = "t-00000000000" + std::to_string(id);
  t.state = "completed";
  t.final_value = loss;
  t.final_spread = 0.01;
  t.final_points = 10;
  t.iters_per_s = ips;
  t.steps_to_target = steps_to_target;
  t.steps = 1000;
  t.wall_s = 1000 / ips;
  for (int s = 10; s <= 1000; s += 10) t.curve.push_back({s, s / ips, loss + 100.0 / s});
  return t;
}

StudyReport TwoTrialReport() {
  StudyReport r;
  r.meta.study_name = "demo";
  r.meta.version = "0.1.0";
  r.meta.param_names = {"micro_batch_size", "optimizer"};
  r.meta.gpus_per_node = 8;
  r.trials = {Completed(1, 2.50, 2.0, 900), Completed(2, 2.40, 3.4, 600)};
  r.trials[0].param_values = Cells({1, "adamw"});
  r.trials[1].param_values = Cells({4, "adamw"});
  r.baseline = 0;
  r.baseline_note = "the first completed trial";
  r.target = 2.5;
  r.target_basis = "the baseline's final lm_loss, smoothed";
  return r;
}

TEST_CASE("HTML escaping covers text and attribute contexts", "[report]") {
  REQUIRE(HtmlEscape(kHostile) == "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;");
  REQUIRE(HtmlEscape("a&b \"q\" 'p'") == "a&amp;b &quot;q&quot; &#39;p&#39;");
  REQUIRE(HtmlEscape(std::string("nul\0x", 5)) == "nul&#xFFFD;x");
}

TEST_CASE("Ellipsize never splits a UTF-8 character", "[report]") {
  REQUIRE(Ellipsize("abcdef", 10) == "abcdef");
  REQUIRE(Ellipsize("abcdef", 3) == "ab…");
  REQUIRE(Ellipsize("ééééé", 3) == "éé…");
  REQUIRE(Ellipsize("日本語テキスト", 4) == "日本語…");
}

TEST_CASE("Number formats", "[report]") {
  REQUIRE(FormatSig(1234.6, 3) == "1235");
  REQUIRE(FormatSig(12.345, 3) == "12.3");
  REQUIRE(FormatSig(0.0123456, 3) == "0.0123");
  REQUIRE(FormatSig(-0.0001, 3) == "-0.000100");
  REQUIRE(FormatSig(2.5e7, 3) == "2.50e+07");
  REQUIRE(FormatSig(0, 3) == "0");
  REQUIRE(FormatDuration(42) == "42.0 s");
  REQUIRE(FormatDuration(600) == "10.0 min");
  REQUIRE(FormatDuration(3 * 3600) == "3.0 h");
  REQUIRE(FormatFactor(2.5) == "×2.50");
}

TEST_CASE("Nice ticks fall on 1, 2 or 5 times a power of ten", "[report]") {
  auto fifths = NiceTicks(0, 1, 5);
  REQUIRE(fifths.size() == 6);
  for (size_t i = 0; i < fifths.size(); ++i) REQUIRE(fifths[i] == Approx(0.2 * static_cast<double>(i)));
  REQUIRE(NiceTicks(0, 300, 6) == std::vector<double>{0, 50, 100, 150, 200, 250, 300});
  auto t = NiceTicks(2.13, 2.61, 5);
  REQUIRE(t.front() >= 2.13);
  REQUIRE(t.back() <= 2.61);
  REQUIRE(t.size() >= 4);
}

TEST_CASE("A parameter value that is markup appears escaped and inert", "[report]") {
  StudyReport r = TwoTrialReport();
  r.meta.study_name = kHostile;
  r.meta.param_names[1] = "opt\"imizer";
  r.meta.cluster = kHostile;
  r.trials[1].param_values[1] = ParamCell(kHostile);
  r.trials[1].reason = kHostile;
  r.trials[1].state = "failed";
  r.trials[0].param_values[1] = ParamCell(kHostile);  // the baseline: in the headline and legend too
  std::string html = RenderHtmlReport(r);
  REQUIRE(html.find(kHostile) == std::string::npos);
  REQUIRE(html.find("<img") == std::string::npos);
  REQUIRE(html.find("<script") == std::string::npos);
  REQUIRE(html.find("onerror=alert(1)>") == std::string::npos);
  REQUIRE(html.find("opt\"imizer") == std::string::npos);
  REQUIRE(Count(html, "&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;") >= 6);
  // No attribute can be closed early: every quote in the page is ours, in pairs.
  REQUIRE(Count(html, "\"") % 2 == 0);
}

TEST_CASE("The report fetches nothing: CSP, no external reference", "[report]") {
  std::string html = RenderHtmlReport(TwoTrialReport());
  REQUIRE(html.starts_with("<!DOCTYPE html>"));
  REQUIRE(html.find(std::string("<meta http-equiv=\"Content-Security-Policy\" content=\"") + kReportCsp + "\">") !=
          std::string::npos);
  // The only URL is the SVG namespace, which names and fetches nothing.
  std::regex url(R"((https?:)?//[A-Za-z0-9])");
  std::string without_ns = std::regex_replace(html, std::regex("http://www\\.w3\\.org/2000/svg"), "");
  REQUIRE(!std::regex_search(without_ns, url));
  for (const char* tag : {"<script", "<link", "<img", "<iframe", "<object", "<embed", "@import", "url(http"}) {
    INFO(tag);
    REQUIRE(html.find(tag) == std::string::npos);
  }
  REQUIRE(html.find("@media print") != std::string::npos);
}

TEST_CASE("The headline shows throughput x convergence = time to target with its numbers", "[report]") {
  std::string html = RenderHtmlReport(TwoTrialReport());
  // 3.4 / 2.0 = 1.7 iterations per second; 900 / 600 = 1.5 steps; 1.7 x 1.5 = 2.55.
  REQUIRE(html.find("×1.70</div><div class=\"l\">throughput<br>3.40 vs 2.00 iter/s") != std::string::npos);
  REQUIRE(html.find("<div class=\"factor total\"><div class=\"v\">×2.55") != std::string::npos);
  REQUIRE(html.find("×1.50</div><div class=\"l\">convergence<br>target at step 600 vs 900") != std::string::npos);
  REQUIRE(html.find("×2.55</div><div class=\"l\">time to target<br>") != std::string::npos);
  REQUIRE(html.find("lm_loss ≤ 2.500") != std::string::npos);
  REQUIRE(html.find("micro_batch_size=4, optimizer=adamw") != std::string::npos);
}

TEST_CASE("Wording: one completed trial is singular; a CPU study's TFLOP/s are not per GPU", "[report]") {
  StudyReport r = TwoTrialReport();
  r.trials[0].tflops_per_gpu = 1.5;
  r.trials[1].state = "failed";
  std::string gpu = RenderHtmlReport(r);
  CHECK(gpu.find("among the 1 completed trial.") != std::string::npos);
  CHECK(gpu.find("among 1 completed trials") == std::string::npos);
  CHECK(gpu.find("<th class=\"n\">TFLOP/s per GPU</th>") != std::string::npos);
  r.meta.gpus_per_node = 0;
  std::string cpu = RenderHtmlReport(r);
  CHECK(cpu.find("TFLOP/s per GPU</th>") == std::string::npos);
  CHECK(cpu.find("<th class=\"n\">TFLOP/s</th>") != std::string::npos);
  CHECK(RenderHtmlReport(TwoTrialReport()).find("among 2 completed trials") != std::string::npos);
}

TEST_CASE("The ranking shows the top N and folds the rest", "[report]") {
  StudyReport r = TwoTrialReport();
  for (int i = 3; i <= 30; ++i) {
    r.trials.push_back(Completed(i, 3.0 + i, 1.0, 900));
    r.trials.back().param_values = Cells({i, "sgd"});
  }
  HtmlOptions o;
  o.top_n = 5;
  std::string html = RenderHtmlReport(r, o);
  REQUIRE(html.find("<details><summary>25 more trials</summary>") != std::string::npos);
  size_t details = html.find("<details>");
  REQUIRE(html.find(r.trials[1].key) < details);     // the best one is above the fold
  REQUIRE(html.rfind("t-0000000000030") > details);  // the worst one below
}

TEST_CASE("Each early stop is listed with its rule and numbers in full, escaped", "[report]") {
  StudyReport r = TwoTrialReport();
  TrialSummary p = Completed(3, 4.0, 1.0, 900);
  p.state = "pruned";
  p.steps = 120;
  p.reason =
      "pruned by the median rule: at t=1.2e+03s: running average of smoothed loss 4.1 > median 3.2 of 5 "
      "trials " +
      kHostile;
  r.trials.push_back(p);
  std::string html = RenderHtmlReport(r);
  size_t table = html.find("<h3>Stopped early</h3>");
  REQUIRE(table != std::string::npos);
  CHECK(html.find("running average of smoothed loss 4.1 &gt; median 3.2 of 5 trials", table) != std::string::npos);
  CHECK(html.find(kHostile) == std::string::npos);
  // In the ranking, the badge says pruned and the note beside it the rule, not "pruned by the…" again.
  CHECK(html.find(">pruned</span> <span class=\"note\">median rule</span>") != std::string::npos);
  CHECK(RenderHtmlReport(TwoTrialReport()).find("Stopped early") == std::string::npos);  // none stopped: no table
}

TEST_CASE("A study with nothing finished still renders", "[report]") {
  StudyReport r;
  r.meta.study_name = "empty";
  r.baseline_note = "no trial has completed yet";
  std::string html = RenderHtmlReport(r);
  REQUIRE(html.find("No trial has completed") != std::string::npos);
  REQUIRE(html.find("</html>") != std::string::npos);
  TrialSummary queued;
  queued.key = "t-1";
  queued.state = "pending";
  r.trials.push_back(queued);
  REQUIRE(RenderHtmlReport(r).find("pending") != std::string::npos);
}

TEST_CASE("Line charts skip NaN points and clip the first points of a loss", "[report]") {
  LineChart c;
  c.id = "t";
  LineSeries s;
  for (int i = 0; i < 100; ++i) {
    s.x.push_back(i);
    s.y.push_back(i == 50 ? std::nan("") : i == 0 ? 1000.0 : 1.0 + 1.0 / (i + 1));
  }
  c.series.push_back(s);
  std::string svg = RenderLineChart(c);
  REQUIRE(svg.find("nan") == std::string::npos);
  REQUIRE(svg.find("inf") == std::string::npos);
  REQUIRE(Count(svg, "<path d=\"M") == 1);
  REQUIRE(Count(svg, "M") >= 2);                     // the NaN broke the line into two
  REQUIRE(svg.find(">1000<") == std::string::npos);  // the y axis does not reach up to the spike
}

TEST_CASE("Tick labels of huge values stay short", "[report]") {
  LineChart chart;
  chart.id = "huge";
  chart.clip_y = LineChart::Clip::kNone;
  LineSeries s;
  s.x = {1, 2, 3};
  s.y = {-1e300, 0, 5e299};
  chart.series.push_back(s);
  std::string svg = RenderLineChart(chart);
  // No label of 300 digits: every run of digits in the chart is short.
  size_t longest = 0, run = 0;
  for (char c : svg) {
    run = std::isdigit(static_cast<unsigned char>(c)) ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  CHECK(longest < 12);
  CHECK_THAT(svg, Catch::Contains("e+299") || Catch::Contains("e+300"));
}

}  // namespace
}  // namespace sweep::reports

namespace sweep::reports {
namespace {

TEST_CASE("Telemetry: a chart row per trial, measured GPU memory beside the planner's prediction", "[report]") {
  StudyReport r = TwoTrialReport();
  r.meta.monitor = true;
  {
    // Without samples the section says so instead of vanishing.
    std::string html = RenderHtmlReport(r);
    CHECK(Count(html, "<section id=\"telemetry\">") == 1);
    CHECK_THAT(html, Catch::Contains("No telemetry sample stored yet"));
  }
  r.trials[1].param_values = Cells({4, kHostile});
  for (int gpu = 0; gpu < 2; ++gpu) {
    std::string g = "system/gpu" + std::to_string(gpu);
    r.trials[1].telemetry.push_back({g + "/mem_used_gib", {0, 10, 20}, {30, 61.5, 62}});
    r.trials[1].telemetry.push_back({g + "/power_w", {0, 10, 20}, {120, 600, 610}});
    r.trials[1].telemetry.push_back({g + "/util_pct", {0, 10, 20}, {5, 97, 98}});
  }
  r.trials[1].telemetry.push_back({"system/node/cpu_pct", {10, 20}, {40, 41}});
  r.trials[1].predicted_gpu_mem_gib = 58.25;
  r.trials[0].telemetry.push_back({"system/node/mem_used_gib", {0, 10}, {3.5, 3.6}});
  std::string html = RenderHtmlReport(r);
  CHECK_THAT(html, !Catch::Contains("No telemetry"));
  // The GPU trial: utilization (GPUs and the node's CPU), memory with the prediction, power.
  CHECK_THAT(html, Catch::Contains("id=\"tel-2-util-plot\""));
  CHECK_THAT(html, Catch::Contains("id=\"tel-2-mem-plot\""));
  CHECK_THAT(html, Catch::Contains("id=\"tel-2-power-plot\""));
  CHECK_THAT(html, Catch::Contains("Utilization: gpu0, gpu1, node CPU (dashed)"));
  CHECK_THAT(html, Catch::Contains("GPU memory used: gpu0, gpu1, planner&#39;s prediction 58.2 GiB (dashed)"));
  // The CPU-only trial: node memory, no power chart.
  CHECK_THAT(html, Catch::Contains("id=\"tel-1-mem-plot\""));
  CHECK_THAT(html, Catch::Contains("node memory in use: node"));
  CHECK_THAT(html, !Catch::Contains("id=\"tel-1-power"));
  // Parameter values in the row titles are escaped.
  CHECK_THAT(html, !Catch::Contains("<img src=x"));
}

}  // namespace
TEST_CASE("HTML text carries no control byte or invalid UTF-8: each becomes &#xFFFD;", "[report]") {
  CHECK(HtmlEscape(std::string("a\0b", 3)) == "a&#xFFFD;b");
  CHECK(HtmlEscape("lm\x1b[31m<x>\xff\xC3\xA9") == "lm&#xFFFD;[31m&lt;x&gt;&#xFFFD;\xC3\xA9");
  CHECK(HtmlEscape("\xC2\x9B") == "&#xFFFD;&#xFFFD;");  // C1 CSI
}

}  // namespace sweep::reports
