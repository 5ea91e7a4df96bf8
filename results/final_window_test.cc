// Issue 42: a trial's final value comes from the last values its metric summary keeps, with no
// point read, and is the same value, bit for bit, as from its last points read through the index;
// a summary written before (the last 9 values only) falls back to reading them.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>

#include "base/final_objective.h"
#include "results/trial_facts.h"
#include "store/store.h"
#include "tests/test_util.h"

namespace sweep::results {
namespace {

bool Same(const std::optional<FinalObjective>& a, const std::optional<FinalObjective>& b) {
  if (a.has_value() != b.has_value()) return false;
  if (!a) return true;
  auto eq = [](double x, double y) { return (std::isnan(x) && std::isnan(y)) || x == y; };
  return eq(a->value, b->value) && eq(a->spread, b->spread) && a->points == b->points && eq(a->last, b->last);
}

TEST_CASE("Final value from the summary's last values: the same as from the last points, at any length", "[report]") {
  testing::TempDir dir;
  auto opened = store::Store::Open(dir.file("f.db"));
  REQUIRE(opened.ok());
  auto& store = **opened;
  int64_t study = *store.UpsertStudy("f", "/f.toml", "h", 0);
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<store::TrialRecord> trials;
  for (int i = 0; i < 40; ++i) {
    store::TrialRecord t;
    t.trial_key = "t-" + std::to_string(i);
    t.params_json = "{}";
    t.state = "completed";
    trials.push_back(t);
  }
  REQUIRE(store.InsertTrialsIfAbsent(study, trials).ok());
  for (const auto& t : trials) {
    // 1 to ~3000 points, some NaN, appended in a few chunks as ticks would.
    size_t n = 1 + static_cast<size_t>(std::pow(unit(rng), 2) * 3000);
    std::vector<store::MetricRow> rows;
    for (size_t k = 0; k < n; ++k) {
      double v = unit(rng) < 0.03 ? std::numeric_limits<double>::quiet_NaN() : 3 - unit(rng);
      rows.push_back({static_cast<int64_t>(10 * (k + 1)), 0.1 * static_cast<double>(k), "lm_loss", v});
    }
    size_t cut = rows.size() / 3;
    REQUIRE(store.AppendMetrics(t.id, {rows.begin(), rows.begin() + static_cast<std::ptrdiff_t>(cut)}, 1).ok());
    REQUIRE(store.AppendMetrics(t.id, {rows.begin() + static_cast<std::ptrdiff_t>(cut), rows.end()}, 2).ok());

    auto summary = store.Summary(t.id);
    REQUIRE(summary.ok());
    const store::MetricSummary* m = summary->Find("lm_loss");
    REQUIRE(m);
    CHECK(m->HasFinalWindow());
    auto tail = store.MetricTail(t.id, "lm_loss", kFinalWindow);
    REQUIRE(tail.ok());
    std::optional<FinalObjective> want = FinalObjectiveOf(*tail);
    auto got = FinalFromTail(store, t.id, *summary, "lm_loss");
    REQUIRE(got.ok());
    INFO(n << " points");
    CHECK(Same(*got, want));

    // A summary as an older slurmsweep kept it (one value short of the window): read from the points.
    store::TrialSummary old = *summary;
    for (auto& metric : old.metrics) {
      if (metric.recent.size() == kFinalWindow) metric.recent.erase(metric.recent.begin());
    }
    if (n >= kFinalWindow) CHECK_FALSE(old.Find("lm_loss")->HasFinalWindow());
    auto fallback = FinalFromTail(store, t.id, old, "lm_loss");
    REQUIRE(fallback.ok());
    CHECK(Same(*fallback, want));
  }
}

}  // namespace
}  // namespace sweep::results
