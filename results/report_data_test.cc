// Tests of the report built from a study in the database: the numbers in the HTML table and the
// decomposition agree with the store's rows, escaping holds end to end, curves are bounded, and
// trials.csv / metrics.csv carry exactly what the store holds.
#include "results/report_data.h"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <sstream>

#include "base/clock.h"
#include "results/report_files.h"
#include "results/study_trials.h"
#include "planner/planner.h"
#include "reports/html_report.h"
#include "reports/html_text.h"
#include "tests/synthetic_study.h"
#include "tests/test_util.h"

namespace sweep::results {
namespace {

using testing::ReadAll;
using testing::TempDir;

struct Fixture {
  TempDir dir;
  std::unique_ptr<store::Store> store;
  study::Study study = testing::SyntheticStudy();
  int64_t study_id = 0;
  testing::SyntheticOptions options;

  explicit Fixture(testing::SyntheticOptions o = {}) : options(o) {
    auto opened = store::Store::Open(dir.file("study.db"));
    REQUIRE(opened.ok());
    store = std::move(opened.value());
    study_id = testing::FillSyntheticStudy(*store, study, options);
  }
};

std::vector<store::MetricRow> RowsNamed(store::Store& s, int64_t trial_id, const std::string& name) {
  std::vector<store::MetricRow> out;
  auto metrics = s.Metrics(trial_id);
  REQUIRE(metrics.ok());
  for (const auto& m : *metrics) {
    if (m.name == name) out.push_back(m);
  }
  return out;
}

// The <tr> of the ranking table that shows `key`.
std::string TableRow(const std::string& html, const std::string& key) {
  size_t at = html.find("<td><span class=\"key\">" + key + "</span>");
  REQUIRE(at != std::string::npos);
  size_t start = html.rfind("<tr", at);
  return html.substr(start, html.find("</tr>", at) - start);
}

std::vector<std::string> Cells(const std::string& row) {
  std::vector<std::string> cells;
  for (size_t at = row.find("<td"); at != std::string::npos; at = row.find("<td", at + 1)) {
    size_t open = row.find('>', at) + 1;
    cells.push_back(row.substr(open, row.find("</td>", open) - open));
  }
  return cells;
}

TEST_CASE("Report values match the store's rows", "[report]") {
  Fixture f;
  auto report = CollectReport(*f.store, f.study, f.study_id, {}, f.options.now);
  REQUIRE(report.ok());
  auto trials = *f.store->ListTrials(f.study_id);
  REQUIRE(report->trials.size() == trials.size());
  for (size_t i = 0; i < trials.size(); ++i) {
    const auto& s = report->trials[i];
    INFO(s.key << " " << s.state);
    REQUIRE(s.key == trials[i].trial_key);
    REQUIRE(s.state == trials[i].state);
    auto loss = RowsNamed(*f.store, trials[i].id, "lm_loss");
    auto iter = RowsNamed(*f.store, trials[i].id, "iter_time_ms");
    if (loss.empty()) {
      REQUIRE(!s.final_value);
      REQUIRE(!s.iters_per_s);
      continue;
    }
    // The final value is the mean of the last 10 points (base/final_objective.h); the raw last one is kept.
    REQUIRE(*s.last_value == loss.back().value);
    double sum = 0;
    size_t from = loss.size() > 10 ? loss.size() - 10 : 0;
    for (size_t k = from; k < loss.size(); ++k) sum += loss[k].value;
    REQUIRE(*s.final_value == Approx(sum / static_cast<double>(loss.size() - from)));
    // Steady state, from every stored point: the median of the means of consecutive points
    // (the store's downsampled series), the first (start-up) bucket left out.
    std::vector<CurvePoint> points;
    for (const auto& m : iter) points.push_back({m.step, m.time_s, m.value});
    double median = *store::SummarizeSeries("iter_time_ms", points).SteadyLevel();
    REQUIRE(*s.iters_per_s == Approx(1000 / median));
    REQUIRE(*s.tokens_per_s ==
            Approx(1000 / median * 2048 * RowsNamed(*f.store, trials[i].id, "global_batch_size")[0].value));
    REQUIRE(*s.wall_s == Approx((trials[i].ended_at ? *trials[i].ended_at : f.options.now) - *trials[i].started_at));
    REQUIRE(*s.queue_s == Approx(*trials[i].started_at - *trials[i].submitted_at));
  }

  // The same numbers, as the HTML table prints them.
  std::string html = reports::RenderHtmlReport(*report);
  reports::Analysis a = reports::Analyze(*report);
  for (size_t i : a.ranking) {
    const auto& s = report->trials[i];
    INFO(s.key);
    auto cells = Cells(TableRow(html, s.key));
    // #, trial, 4 params, state, steps, iter/s, tokens/s, TFLOP/s, final, time to target, GPU-hours, queued
    REQUIRE(cells.size() == 15);
    REQUIRE(cells[2] == reports::HtmlEscape(s.param_values[0].text));
    REQUIRE(cells[6].find(reports::StateLabel(s.state)) != std::string::npos);
    REQUIRE(cells[8] == reports::FormatSigOr(s.iters_per_s, 3));
    REQUIRE(cells[11] == (s.final_value ? reports::FormatSig(*s.final_value, 4) : "–"));
    auto hours = reports::ResourceHours(s, report->meta);
    if (hours) REQUIRE(cells[13] == (*hours >= 1000 ? fmt::format("{:.0f}", *hours) : reports::FormatSig(*hours, 3)));
    if (s.wall_s) REQUIRE(*hours == Approx(*s.wall_s * 2 * 8 / 3600));  // 2 nodes x 8 GPUs
  }
}

TEST_CASE("Without a named baseline the report shows no speedup and says why", "[report]") {
  // Issue 31: the first completed trial was an arbitrary reference for the "baseline" badge, the
  // speedup boxes and the target.
  Fixture f;
  auto report = CollectReport(*f.store, f.study, f.study_id, {}, f.options.now);
  REQUIRE(report.ok());
  CHECK(!report->baseline);
  CHECK(report->baseline_note.find("names no baseline") != std::string::npos);
  reports::Analysis a = reports::Analyze(*report);
  REQUIRE(a.recommended);
  CHECK(!a.decomposition);
  // The target is the worst completed final value, which every completed trial reaches.
  REQUIRE(report->target);
  CHECK(report->target_basis.find("worst smoothed final") != std::string::npos);
  for (const auto& t : report->trials) {
    if (t.state == "completed") CHECK(t.steps_to_target);
  }
  std::string html = reports::RenderHtmlReport(*report);
  CHECK(html.find("No speedup is shown: the study names no baseline") != std::string::npos);
  CHECK(html.find("class=\"factor") == std::string::npos);
  CHECK(html.find("tag base") == std::string::npos);
  CHECK(html.find("The factor is relative to the baseline") == std::string::npos);
}

TEST_CASE("The decomposition multiplies out and matches the curves in the store", "[report]") {
  Fixture f;
  ReportOptions named;
  named.baseline = (*f.store->ListTrials(f.study_id))[0].trial_key;
  auto report = CollectReport(*f.store, f.study, f.study_id, named, f.options.now);
  REQUIRE(report.ok());
  REQUIRE(report->baseline == size_t{0});
  reports::Analysis a = reports::Analyze(*report);
  REQUIRE(a.recommended);
  REQUIRE(*a.recommended != 0);
  REQUIRE(a.decomposition);
  const auto& d = *a.decomposition;
  REQUIRE(d.throughput * d.convergence == Approx(d.time_to_target));

  const auto& base = report->trials[0];
  const auto& rec = report->trials[*a.recommended];
  // Target: the baseline's final loss, the mean of its last 10 points, recomputed from the store.
  auto base_loss = RowsNamed(*f.store, base.id, "lm_loss");
  double sum = 0;
  for (size_t i = base_loss.size() - 10; i < base_loss.size(); ++i) sum += base_loss[i].value;
  REQUIRE(*report->target == Approx(sum / 10));
  REQUIRE(*report->target == *base.final_value);
  REQUIRE(base.steps_to_target);  // the baseline reaches its own target
  // Where the recommendation's trailing mean of (up to) 10 points crosses the target for the last
  // time, from the store: linear between the last point above it and the next (issue 41).
  auto rec_loss = RowsNamed(*f.store, rec.id, "lm_loss");
  auto smoothed_at = [&](size_t i) {
    double window = 0;
    size_t from = i >= 9 ? i - 9 : 0;
    for (size_t k = from; k <= i; ++k) window += rec_loss[k].value;
    return window / static_cast<double>(i - from + 1);
  };
  size_t past = rec_loss.size();
  while (past > 0 && smoothed_at(past - 1) <= *report->target) --past;
  REQUIRE(past > 0);
  REQUIRE(past < rec_loss.size());
  double above = smoothed_at(past - 1), below = smoothed_at(past);
  std::optional<int64_t> first =
      rec_loss[past - 1].step + std::llround((*report->target - above) / (below - above) *
                                             static_cast<double>(rec_loss[past].step - rec_loss[past - 1].step));
  REQUIRE(rec.steps_to_target == first);
  CHECK(*first > rec_loss[past - 1].step - 1);
  CHECK(*first <= rec_loss[past].step);
  REQUIRE(d.convergence == Approx(static_cast<double>(*base.steps_to_target) / *first));
  REQUIRE(d.throughput == Approx(*rec.iters_per_s / *base.iters_per_s));
  REQUIRE(d.time_to_target == Approx(*reports::TimeToTarget(base) / *reports::TimeToTarget(rec)));

  std::string html = reports::RenderHtmlReport(*report);
  REQUIRE(html.find(reports::FormatFactor(d.throughput) + "</div><div class=\"l\">throughput") != std::string::npos);
  REQUIRE(html.find(reports::FormatFactor(d.convergence) + "</div><div class=\"l\">convergence") != std::string::npos);
  REQUIRE(html.find(reports::FormatFactor(d.time_to_target) + "</div><div class=\"l\">time to target") !=
          std::string::npos);
}

TEST_CASE("The baseline can be named by key or by parameters", "[report]") {
  Fixture f;
  auto trials = *f.store->ListTrials(f.study_id);
  ReportOptions o;
  o.baseline = trials[3].trial_key;
  auto r = CollectReport(*f.store, f.study, f.study_id, o, f.options.now);
  REQUIRE(r->baseline == size_t{3});

  o.baseline = R"({"micro_batch_size": 2, "lr": "0.0003"})";  // a number given as text matches too
  r = CollectReport(*f.store, f.study, f.study_id, o, f.options.now);
  REQUIRE(r->baseline == size_t{5});

  o.baseline = "t-nosuchtrial";
  r = CollectReport(*f.store, f.study, f.study_id, o, f.options.now);
  REQUIRE(!r->baseline);
  REQUIRE(r->baseline_note.find("matches no trial") != std::string::npos);
  // Without a completed baseline the target is the worst completed final value: all reach it.
  for (const auto& t : r->trials) {
    if (t.state == "completed") REQUIRE(t.steps_to_target);
  }
  REQUIRE(reports::RenderHtmlReport(*r).find("matches no trial") != std::string::npos);

  o = {};
  o.target = 2.2;
  r = CollectReport(*f.store, f.study, f.study_id, o, f.options.now);
  REQUIRE(r->target == 2.2);
}

TEST_CASE("A hostile parameter value from the store reaches the HTML escaped", "[report]") {
  testing::SyntheticOptions o;
  o.hostile_value = "</script><img src=x onerror=alert(1)>";
  Fixture f(o);
  auto report = CollectReport(*f.store, f.study, f.study_id, {}, f.options.now);
  REQUIRE(report.ok());
  REQUIRE(report->trials[1].param_values[2].text == o.hostile_value);
  std::string html = reports::RenderHtmlReport(*report);
  REQUIRE(html.find(o.hostile_value) == std::string::npos);
  REQUIRE(html.find("<img") == std::string::npos);
  REQUIRE(html.find("&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;") != std::string::npos);
}

TEST_CASE("Curves are downsampled with their first and last points kept", "[report]") {
  testing::SyntheticOptions o;
  o.trials = 8;
  o.points = 3000;
  Fixture f(o);
  auto report = CollectReport(*f.store, f.study, f.study_id, {}, f.options.now);
  REQUIRE(report.ok());
  for (const auto& t : report->trials) {
    auto loss = RowsNamed(*f.store, t.id, "lm_loss");
    if (loss.empty()) continue;
    REQUIRE(t.curve.size() <= 500);
    REQUIRE(t.curve.size() == std::min<size_t>(500, loss.size()));
    REQUIRE(t.curve.front().step == loss.front().step);
    REQUIRE(t.curve.back().step == loss.back().step);
    REQUIRE(t.curve.front().value == loss.front().value);
    REQUIRE(t.curve.back().value == *t.final_value);  // the curve drawn is the smoothed one
    REQUIRE(t.curve.back().time_s == loss.back().time_s);
  }
}

// A report drawn from the store's summaries (long trials) against one from every point, on the
// same study: final values, target, steps to target, throughput and the ranking are the same
// numbers; the curves are the bucket means, from the first point to the final value.
void CheckSummaryReportAgrees(const study::Study& study, Fixture& f) {
  ReportOptions from_points, from_summaries;
  from_points.raw_row_budget = std::numeric_limits<int64_t>::max();
  from_summaries.raw_row_budget = 0;
  // The first completed trial as the baseline, so that the target is its final value: some
  // trials reach it and some do not.
  auto trials = f.store->ListTrials(f.study_id);
  REQUIRE(trials.ok());
  for (const auto& t : *trials) {
    if (t.state != "completed") continue;
    from_points.baseline = from_summaries.baseline = t.trial_key;
    break;
  }
  auto a = CollectReport(*f.store, study, f.study_id, from_points, f.options.now);
  auto b = CollectReport(*f.store, study, f.study_id, from_summaries, f.options.now);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->meta.curves_from_buckets == 0);
  CHECK(b->meta.curves_from_buckets > 0);
  REQUIRE(a->target);
  CHECK(a->target == b->target);
  CHECK(a->baseline == b->baseline);
  REQUIRE(a->trials.size() == b->trials.size());
  int reached = 0, not_reached = 0;
  for (size_t i = 0; i < a->trials.size(); ++i) {
    const auto& x = a->trials[i];
    const auto& y = b->trials[i];
    INFO(x.key << " " << x.state);
    CHECK(x.final_value == y.final_value);  // bit for bit
    CHECK(x.final_spread == y.final_spread);
    CHECK(x.final_points == y.final_points);
    CHECK(x.last_value == y.last_value);
    CHECK(x.steps_to_target == y.steps_to_target);  // exactly: the crossing is found in the points
    (x.steps_to_target ? reached : not_reached) += x.final_value.has_value();
    CHECK(x.iters_per_s == y.iters_per_s);
    CHECK(x.steps == y.steps);
    // Constant per trial in the synthetic study: the median of bucket means is the median.
    CHECK(x.tflops_per_gpu.has_value() == y.tflops_per_gpu.has_value());
    if (x.tflops_per_gpu) CHECK(*y.tflops_per_gpu == Approx(*x.tflops_per_gpu));
    if (x.tokens_per_s) CHECK(*y.tokens_per_s == Approx(*x.tokens_per_s));
    if (!x.final_value) {
      CHECK(y.curve.empty());
      continue;
    }
    // The curve: first point and last (the final value) as drawn from every point; between them
    // bucket means at bucket ends, in step order.
    REQUIRE(y.curve.size() >= 2);
    CHECK(y.curve.size() <= 500);
    CHECK(y.curve.front().step == x.curve.front().step);
    CHECK(y.curve.front().value == x.curve.front().value);
    CHECK(y.curve.back().step == x.curve.back().step);
    CHECK(y.curve.back().time_s == x.curve.back().time_s);
    CHECK(y.curve.back().value == *x.final_value);
    auto summary = f.store->Summary(x.id, {study.objective.metric});
    REQUIRE(summary.ok());
    const store::MetricSummary* m = summary->Find(study.objective.metric);
    REQUIRE(m != nullptr);
    for (size_t k = 1; k + 1 < y.curve.size(); ++k) {
      CHECK(y.curve[k].step > y.curve[k - 1].step);
      auto bucket = std::find_if(m->buckets.begin(), m->buckets.end(),
                                 [&](const store::SeriesBucket& sb) { return sb.last_step == y.curve[k].step; });
      REQUIRE(bucket != m->buckets.end());
      CHECK(y.curve[k].value == bucket->Mean());
    }
  }
  // Both kinds of trial are in the comparison.
  CHECK(reached >= 2);
  CHECK(not_reached >= 1);
  reports::Analysis ra = reports::Analyze(*a), rb = reports::Analyze(*b);
  CHECK(ra.ranking == rb.ranking);
  CHECK(ra.recommended == rb.recommended);
  REQUIRE(ra.decomposition.has_value() == rb.decomposition.has_value());
  if (ra.decomposition) CHECK(ra.decomposition->time_to_target == rb.decomposition->time_to_target);
  // And as the reader sees them: the ranking table's rows are the same text.
  std::string ha = reports::RenderHtmlReport(*a), hb = reports::RenderHtmlReport(*b);
  for (const auto& t : a->trials) {
    if (t.state == "dropped") continue;
    CHECK(TableRow(ha, t.key) == TableRow(hb, t.key));
  }
}

TEST_CASE("A report from the store's summaries agrees with one from every point", "[report][summary]") {
  testing::SyntheticOptions o;
  o.trials = 12;
  o.points = 3000;  // 93 buckets of 32 points per completed trial
  Fixture f(o);
  SECTION("minimising a decaying loss") { CheckSummaryReportAgrees(f.study, f); }
  SECTION("maximising a flat, noisy metric: the smoothed curve crosses the target back and forth") {
    study::Study study = f.study;
    study.objective.metric = "iter_time_ms";
    study.objective.minimize = false;
    CheckSummaryReportAgrees(study, f);
  }
}

TEST_CASE("A long study's report is drawn from summaries by default; a short one's from every point", "[report]") {
  testing::SyntheticOptions o;
  o.trials = 4;
  o.points = 20;
  Fixture small(o);
  auto a = CollectReport(*small.store, small.study, small.study_id, {}, small.options.now);
  REQUIRE(a.ok());
  CHECK(a->meta.curves_from_buckets == 0);
  CHECK(reports::RenderHtmlReport(*a).find("drawn from the means of consecutive points") == std::string::npos);
  ReportOptions budget;
  budget.raw_row_budget = 79;  // 20 points x 4 metrics = 80 rows: just over it
  auto b = CollectReport(*small.store, small.study, small.study_id, budget, small.options.now);
  REQUIRE(b.ok());
  CHECK(b->meta.curves_from_buckets == 4);
  CHECK(reports::RenderHtmlReport(*b).find("The curves of the 4 longest trials are drawn from the means") !=
        std::string::npos);
}

TEST_CASE("WriteReports writes trials.csv, metrics.csv and the HTML, 0666 less the umask, atomically", "[report]") {
  Fixture f;
  std::string csv_dir = f.dir.file("out/csv");
  std::string html = f.dir.file("report.html");
  // Wrong or useless requests are refused before anything is written.
  REQUIRE(WriteReports(*f.store, f.study, f.study_id, "", "", f.options.now).code() == Status::Code::kInvalidArgument);
  mode_t old_mask = ::umask(027);
  Status written = WriteReports(*f.store, f.study, f.study_id, html, csv_dir, f.options.now);
  ::umask(old_mask);
  REQUIRE(written.ok());
  namespace fs = std::filesystem;
  for (const std::string& path : {html, csv_dir + "/trials.csv", csv_dir + "/metrics.csv"}) {
    INFO(path);
    REQUIRE(fs::exists(path));
    REQUIRE((fs::status(path).permissions() & fs::perms::all) == fs::perms(0640));
  }
  for (const auto& entry : fs::recursive_directory_iterator(f.dir.path())) {
    REQUIRE(entry.path().string().find(".tmp") == std::string::npos);
  }

  // trials.csv is version 1, exactly what CollectTrialRows gives.
  auto rows = CollectTrialRows(*f.store, f.study, f.study_id, f.options.now);
  REQUIRE(ReadAll(csv_dir + "/trials.csv") == reports::RenderTrialsCsv(ParamNames(f.study), *rows));

  // metrics.csv: one line per stored row, same values to the last bit.
  std::stringstream in(ReadAll(csv_dir + "/metrics.csv"));
  std::string line;
  std::getline(in, line);
  REQUIRE(line == "trial_id,trial_key,step,time_s,name,value");
  std::map<int64_t, std::string> keys;
  auto trials = f.store->ListTrials(f.study_id);
  for (const auto& t : *trials) keys[t.id] = t.trial_key;
  size_t n = 0;
  for (const auto& t : *trials) {
    auto metrics = f.store->Metrics(t.id);
    for (const auto& m : *metrics) {
      REQUIRE(std::getline(in, line));
      auto cells = testing::SplitCsvLine(line);
      REQUIRE(cells.size() == 6);
      REQUIRE(std::stoll(cells[0]) == t.id);
      REQUIRE(cells[1] == keys[t.id]);
      REQUIRE(std::stoll(cells[2]) == m.step);
      REQUIRE(std::stod(cells[3]) == m.time_s);
      REQUIRE(cells[4] == m.name);
      REQUIRE(std::stod(cells[5]) == m.value);
      ++n;
    }
  }
  REQUIRE(!std::getline(in, line));
  REQUIRE(n > 1000);

  // A refresh replaces the files in place; HTML alone and CSV alone work too.
  REQUIRE(WriteReports(*f.store, f.study, f.study_id, html, "", f.options.now + 60).ok());
  REQUIRE(ReadAll(html).find(FormatUtc(f.options.now + 60)) != std::string::npos);
  REQUIRE(WriteReports(*f.store, f.study, f.study_id, "", f.dir.file("csv-only"), f.options.now).ok());
  REQUIRE(fs::exists(f.dir.file("csv-only/metrics.csv")));
  // An unwritable place is an error, not a crash, and leaves no temporary file.
  REQUIRE(!WriteReports(*f.store, f.study, f.study_id, f.dir.file("no/such/dir/r.html"), "", f.options.now).ok());
}

TEST_CASE("metrics.csv keeps NaN, infinities and a missing time apart", "[report][csv]") {
  std::string out;
  reports::AppendMetricsCsvRow(3, "t-1", 10, std::nan(""), "lm_loss", std::nan(""), out);
  reports::AppendMetricsCsvRow(3, "t-1", 20, 1.5, "=cmd", -INFINITY, out);
  reports::AppendMetricsCsvRow(3, "t-1", 30, 0.1 + 0.2, "grad_norm", 1e-300, out);
  REQUIRE(out ==
          "3,t-1,10,,lm_loss,nan\n"
          "3,t-1,20,1.5,'=cmd,-inf\n"
          "3,t-1,30,0.30000000000000004,grad_norm,1e-300\n");
  REQUIRE(reports::kMetricsCsvVersion == 1);
}

}  // namespace
}  // namespace sweep::results

namespace sweep::results {

TEST_CASE("MFU is reported against the peak the study gives, from tokens/s and the model's FLOPs per token",
          "[report]") {
  Fixture f;
  auto plain = CollectReport(*f.store, f.study, f.study_id, {}, f.options.now);
  REQUIRE(plain.ok());
  for (const auto& s : plain->trials) CHECK_FALSE(s.mfu);  // no peak given: no MFU
  f.study.job.vars["model"] = "llama3.1-8b";
  f.study.job.vars["peak_tflops"] = "989";
  auto report = CollectReport(*f.store, f.study, f.study_id, {}, f.options.now);
  REQUIRE(report.ok());
  auto model = planner::FindModelPreset("llama3.1-8b");
  REQUIRE(model);
  int logged = 0;
  for (const auto& s : report->trials) {
    if (s.tflops_per_gpu && *s.tflops_per_gpu > 0) {
      // Megatron's own TFLOP/s per GPU (--log-throughput) over the peak.
      REQUIRE(s.mfu);
      CHECK(*s.mfu == Approx(*s.tflops_per_gpu / 989));
      ++logged;
    }
  }
  CHECK(logged > 0);
  // Without a logged TFLOP/s: achieved model FLOP/s per GPU (16 GPUs) from tokens/s, over the peak.
  std::vector<store::TrialRecord> extra(1);
  extra[0].trial_key = "t-notflops";
  extra[0].params_json = "{}";
  extra[0].state = "completed";
  REQUIRE(f.store->InsertTrialsIfAbsent(f.study_id, extra).ok());
  std::vector<store::MetricRow> rows;
  for (int step = 10; step <= 50; step += 10) {
    rows.push_back({step, step * 0.5, "iter_time_ms", 500});
    rows.push_back({step, step * 0.5, "lm_loss", 3.0});
    rows.push_back({step, step * 0.5, "global_batch_size", 64});
  }
  REQUIRE(f.store->AppendMetrics(extra[0].id, rows, 100).ok());
  report = CollectReport(*f.store, f.study, f.study_id, {}, f.options.now);
  REQUIRE(report.ok());
  const auto& s = report->trials.back();
  REQUIRE(s.key == "t-notflops");
  REQUIRE(s.tokens_per_s);
  CHECK(*s.tokens_per_s == Approx(64 * 2048 * 2.0));  // 2 iterations per second of 64 x 2048 tokens
  REQUIRE(s.mfu);
  CHECK(*s.mfu == Approx(*s.tokens_per_s * planner::ModelFlopsPerToken(*model) / 16 / 989e12));
  std::string html = reports::RenderHtmlReport(*report, {});
  CHECK_THAT(html, Catch::Contains(">MFU</th>"));
}

}  // namespace sweep::results

namespace sweep::results {
namespace {

TEST_CASE("a retried trial's wall time and cost count its earlier attempts", "[report]") {
  Fixture f;
  auto before = CollectTrialRows(*f.store, f.study, f.study_id, f.options.now);
  REQUIRE(before.ok());
  auto trials = f.store->ListTrials(f.study_id);
  REQUIRE(trials.ok());
  store::TrialRecord t = trials->front();
  REQUIRE(t.started_at);
  REQUIRE(t.ended_at);
  t.prior_run_s = 1800;  // a first attempt that ran half an hour and died with its node
  REQUIRE(f.store->UpdateTrial(t).ok());
  REQUIRE(f.store->GetTrial(t.id)->prior_run_s == 1800);
  auto after = CollectTrialRows(*f.store, f.study, f.study_id, f.options.now);
  REQUIRE(after.ok());
  CHECK(*after->front().wall_time_s == Approx(*before->front().wall_time_s + 1800));
  auto report = CollectReport(*f.store, f.study, f.study_id, {}, f.options.now);
  REQUIRE(report.ok());
  // 2 nodes x 8 GPUs: half an hour more is 8 GPU-hours more.
  CHECK(*reports::ResourceHours(report->trials.front(), report->meta) ==
        Approx((*before->front().wall_time_s + 1800) * 16 / 3600.0));
}

}  // namespace
}  // namespace sweep::results
