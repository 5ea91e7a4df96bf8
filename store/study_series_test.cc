// Issue 42: a study's bucket series read in one statement per metric (Summaries) are the series
// each trial's own Summary reads, trial by trial, whatever the trials' lengths and the metrics
// each logged.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <random>

#include "store/store.h"
#include "tests/test_util.h"

namespace sweep::store {
namespace {

bool SameBuckets(const std::vector<SeriesBucket>& a, const std::vector<SeriesBucket>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].first_step != b[i].first_step || a[i].last_step != b[i].last_step || a[i].points != b[i].points ||
        a[i].finite != b[i].finite || a[i].sum != b[i].sum || a[i].last_time_s != b[i].last_time_s ||
        a[i].smooth_min != b[i].smooth_min || a[i].smooth_max != b[i].smooth_max) {
      return false;
    }
  }
  return true;
}

TEST_CASE("Summaries of a study read each series in one statement: the same buckets as each trial's Summary",
          "[store][summary]") {
  testing::TempDir dir;
  auto opened = Store::Open(dir.file("s.db"));
  REQUIRE(opened.ok());
  Store& store = **opened;
  // Two studies in one database: the other study's buckets must not leak in.
  int64_t study = *store.UpsertStudy("a", "/a.toml", "h", 0);
  int64_t other = *store.UpsertStudy("b", "/b.toml", "h", 0);
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<TrialRecord> trials, others;
  for (int i = 0; i < 30; ++i) {
    TrialRecord t;
    t.trial_key = "t-" + std::to_string(i);
    t.params_json = "{}";
    t.state = "completed";
    (i % 5 == 4 ? others : trials).push_back(t);
  }
  REQUIRE(store.InsertTrialsIfAbsent(study, trials).ok());
  REQUIRE(store.InsertTrialsIfAbsent(other, others).ok());
  auto fill = [&](const TrialRecord& t) {
    // 0 to ~20,000 points; some trials never log "iter", some log nothing.
    size_t n = static_cast<size_t>(std::pow(unit(rng), 2) * 20000);
    bool iter = unit(rng) < 0.7;
    std::vector<MetricRow> rows;
    for (size_t k = 0; k < n; ++k) {
      int64_t step = static_cast<int64_t>(k + 1);
      rows.push_back({step, 0.1 * static_cast<double>(k), "loss", 3 - unit(rng)});
      if (iter) rows.push_back({step, 0.1 * static_cast<double>(k), "iter", 100 + unit(rng)});
    }
    REQUIRE(store.AppendMetrics(t.id, rows, 1).ok());
  };
  for (const auto& t : trials) fill(t);
  for (const auto& t : others) fill(t);

  auto all = store.Summaries(study, {"iter", "loss", "never_logged"});
  REQUIRE(all.ok());
  size_t with_metrics = 0;
  for (const auto& t : trials) {
    auto one = store.Summary(t.id, {"iter", "loss"});
    REQUIRE(one.ok());
    if (one->metrics.empty()) continue;
    ++with_metrics;
    auto it = std::find_if(all->begin(), all->end(), [&](const TrialSummary& s) { return s.trial_id == t.id; });
    REQUIRE(it != all->end());
    REQUIRE(it->metrics.size() == one->metrics.size());
    for (size_t m = 0; m < one->metrics.size(); ++m) {
      INFO("trial " << t.id << " " << one->metrics[m].name << ", " << one->metrics[m].points << " points");
      CHECK(it->metrics[m].name == one->metrics[m].name);
      CHECK(static_cast<int64_t>(it->metrics[m].buckets.size()) == one->metrics[m].complete);
      CHECK(SameBuckets(it->metrics[m].buckets, one->metrics[m].buckets));
    }
  }
  CHECK(all->size() == with_metrics);  // only this study's trials
}

}  // namespace
}  // namespace sweep::store
