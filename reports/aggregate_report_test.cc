// Issue 42: the HTML report of a large study shows its best trials in full and the rest as
// aggregates, says so, and stays the same size whatever the number of trials.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "reports/html_report.h"

namespace sweep::reports {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The text of the section with this id.
std::string Section(const std::string& page, const std::string& id) {
  size_t from = page.find("<section id=\"" + id + "\"");
  if (from == std::string::npos) return "";
  return page.substr(from, page.find("</section>", from) - from);
}

// n trials of random final values over micro_batch_size (4 values), optimizer (2) and lr (a
// log-scale range): a sixth pruned part-way with a rule, the rest completed. Trial 7 is the baseline.
StudyReport RandomStudy(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  StudyReport r;
  r.meta.study_name = "large";
  r.meta.version = "test";
  r.meta.param_names = {"micro_batch_size", "optimizer", "lr"};
  r.meta.param_log = {false, false, true};
  r.meta.gpus_per_node = 8;
  for (size_t i = 0; i < n; ++i) {
    TrialSummary t;
    t.id = static_cast<int64_t>(i + 1);
    t.key = fmt::format("t-{:012x}", 0xa0000 + i);
    int mbs = 1 << (i % 4);
    double lr = std::pow(10.0, -5 + 3 * unit(rng));
    t.param_values = {ParamCell(ParamValue(int64_t{mbs})), ParamCell(ParamValue(std::string(i % 3 ? "adamw" : "lion"))),
                      ParamCell(ParamValue(lr))};
    bool pruned = i % 6 == 5;
    t.state = pruned ? "pruned" : "completed";
    if (pruned) t.reason = "pruned by the lead rule: 0.2 nats behind at step 400";
    double end = 2 + unit(rng) + 0.1 * mbs;
    t.steps = pruned ? 400 : 1000;
    t.final_value = end + (pruned ? 0.3 : 0);
    t.final_spread = 0.01;
    t.final_points = 10;
    t.iters_per_s = 2 + mbs * (0.5 + 0.1 * unit(rng));
    t.wall_s = static_cast<double>(t.steps) / *t.iters_per_s;
    t.started_at = 1000 + static_cast<double>(i);
    t.ended_at = *t.started_at + *t.wall_s;
    for (int64_t s = 10; s <= t.steps; s += 20) {
      t.curve.push_back({s, static_cast<double>(s) / *t.iters_per_s, end + 50.0 / static_cast<double>(s)});
    }
    r.trials.push_back(std::move(t));
  }
  r.baseline = 7;
  r.baseline_note = "named by the study";
  r.baseline_named = true;
  r.target = 2.8;
  r.target_basis = "set for this report";
  return r;
}

TEST_CASE("A large study's report: the top N in full, the rest aggregated, and it says so", "[report]") {
  HtmlOptions options;  // top_n 20, detail_limit 200
  StudyReport r = RandomStudy(1000, 42);
  Analysis a = Analyze(r);
  std::string page = RenderHtmlReport(r, options);

  // It says what is aggregated and where the full data is, at the top and in the definitions.
  CHECK_THAT(page, Catch::Contains("id=\"aggregated\""));
  CHECK_THAT(page, Catch::Contains("1\u202f000 trials: the 20 best ranked, the recommendation and the baseline are "
                                   "shown in full"));
  CHECK_THAT(page, Catch::Contains("trials.csv has every trial's row and metrics.csv every logged point"));
  CHECK_THAT(Section(page, "about"), Catch::Contains("Aggregated (more than 200 trials)"));

  // The ranking: the 20 best rows, then the baseline's at its rank, then the rest counted by state.
  std::string ranking = Section(page, "ranking");
  size_t rows = Count(ranking, "<tr") - 1;  // less the header row
  size_t baseline_rank = std::find(a.ranking.begin(), a.ranking.end(), *r.baseline) - a.ranking.begin();
  REQUIRE(baseline_rank >= options.top_n);  // the property below needs a baseline outside the top
  CHECK(rows == options.top_n + 1);
  for (size_t k = 0; k < options.top_n; ++k) CHECK_THAT(ranking, Catch::Contains(r.trials[a.ranking[k]].key));
  CHECK_THAT(ranking, Catch::Contains(r.trials[*r.baseline].key));
  CHECK_THAT(ranking, Catch::Contains(fmt::format("<td class=\"n\">{}</td>", baseline_rank + 1)));
  CHECK_THAT(ranking, Catch::Contains("979 more trials ranked below these"));
  CHECK_THAT(ranking, Catch::Contains("trials.csv has every trial's row"));
  CHECK(ranking.find("<details>") == std::string::npos);

  // A trial outside the top, neither baseline nor recommended, is nowhere by name but among the
  // throughput chart's fastest bars (HtmlOptions::throughput_bars, bounded before issue 42): it is aggregated.
  std::string rest = page;
  rest.erase(rest.find("<section id=\"throughput\""), Section(page, "throughput").size());
  for (size_t k = options.top_n; k < a.ranking.size(); ++k) {
    size_t i = a.ranking[k];
    if (i == *r.baseline) continue;
    INFO(r.trials[i].key);
    CHECK(rest.find(r.trials[i].key) == std::string::npos);
  }

  // Curves: bands and a median of the others; one line per trial in full.
  std::string curves = Section(page, "curves");
  CHECK(Count(curves, "fill-opacity") == 4);  // 10-90 and 25-75, on both charts
  CHECK_THAT(curves, Catch::Contains("the other 979 trials: 10th to 90th percentile"));
  CHECK_THAT(curves, Catch::Contains("Shaded: the other 979 trials"));
  // Parameter effects: a box per value of each categorical parameter, by bin for lr.
  std::string params = Section(page, "parameters");
  CHECK(Count(params, "class=\"spread\"") >= 2 * (4 + 2) + 2);
  CHECK_THAT(params, Catch::Contains("trials with micro_batch_size = 8: median"));
  CHECK_THAT(params, Catch::Contains("Boxes: every trial by value"));
  // Stopped early: counted by rule.
  std::string cost = Section(page, "cost");
  CHECK_THAT(cost, Catch::Contains("<td>lead rule</td><td class=\"n\">166</td>"));
}

TEST_CASE("A large study's report is the same size at 1,000 and at 10,000 trials; a small one is drawn whole",
          "[report]") {
  HtmlOptions options;
  std::string thousand = RenderHtmlReport(RandomStudy(1000, 1), options);
  std::string ten_thousand = RenderHtmlReport(RandomStudy(10000, 2), options);
  INFO(thousand.size() << " and " << ten_thousand.size() << " bytes");
  // Ten times the trials: the page grows by their counts' digits and by what the ranks change, not tenfold.
  CHECK(static_cast<double>(ten_thousand.size()) < 1.2 * static_cast<double>(thousand.size()));
  CHECK(ten_thousand.size() < 1'000'000);

  // At the limit nothing is aggregated: every trial has its row, line and dot, as before issue 42.
  StudyReport small = RandomStudy(options.detail_limit, 3);
  std::string page = RenderHtmlReport(small, options);
  CHECK(page.find("id=\"aggregated\"") == std::string::npos);
  for (const TrialSummary& t : small.trials) CHECK(page.find(t.key) != std::string::npos);
  CHECK(Count(Section(page, "curves"), "fill-opacity") == 0);
  // One more trial and it is.
  StudyReport over = RandomStudy(options.detail_limit + 1, 3);
  CHECK(RenderHtmlReport(over, options).find("id=\"aggregated\"") != std::string::npos);
}

}  // namespace
}  // namespace sweep::reports
