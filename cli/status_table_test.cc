// Issue 42: `status` of a large study lists its best trials and counts the rest; --all lists every one.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <random>
#include <sstream>
#include <string>

#include "cli/status_view.h"
#include "reports/config_ranking.h"
#include "results/configurations.h"

namespace sweep::cli {
namespace {

// The trial keys of the table's rows, in the order printed.
std::vector<std::string> KeysOf(const std::string& table) {
  std::vector<std::string> keys;
  std::istringstream in(table);
  for (std::string line; std::getline(in, line);) {
    if (line.starts_with("t-")) keys.push_back(line.substr(0, line.find(' ')));
  }
  return keys;
}

// n trials in random states with random final values (none for those still queued).
std::vector<reports::TrialRow> RandomRows(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  const char* states[] = {"completed", "completed", "running", "pending", "pruned", "out_of_memory"};
  std::vector<reports::TrialRow> rows;
  for (size_t i = 0; i < n; ++i) {
    reports::TrialRow r;
    r.trial_id = static_cast<int64_t>(i + 1);
    r.trial_key = fmt::format("t-{:012x}", i);
    r.state = states[rng() % std::size(states)];
    if (r.state != "pending") r.objective_value = 2 + unit(rng);
    r.param_values = {ParamCell(ParamValue(int64_t{1 << (i % 4)}))};
    rows.push_back(std::move(r));
  }
  return rows;
}

TEST_CASE("status of a large study lists its best trials and how many more; --all lists every trial", "[cli]") {
  const std::vector<std::string> names = {"micro_batch_size"};
  for (uint32_t seed : {1u, 2u, 3u}) {
    for (bool minimize : {true, false}) {
      std::vector<reports::TrialRow> rows = RandomRows(kStatusAllRows + 1 + seed * 400, seed);
      INFO("seed " << seed << ", minimize " << minimize << ", " << rows.size() << " trials");
      std::string table = RenderStatusTable(rows, names, "lm_loss", minimize, false);
      std::vector<std::string> keys = KeysOf(table);
      // The best kStatusTopRows by final value, best first: no unlisted trial is better than a listed one.
      REQUIRE(keys.size() == kStatusTopRows);
      std::vector<const reports::TrialRow*> by_value;
      for (const auto& r : rows) {
        if (r.objective_value) by_value.push_back(&r);
      }
      std::stable_sort(by_value.begin(), by_value.end(), [&](const reports::TrialRow* a, const reports::TrialRow* b) {
        return minimize ? *a->objective_value < *b->objective_value : *a->objective_value > *b->objective_value;
      });
      for (size_t k = 0; k < kStatusTopRows; ++k) CHECK(keys[k] == by_value[k]->trial_key);
      CHECK_THAT(table, Catch::Contains(fmt::format("the {} best of {} trials by final lm_loss (status --all lists "
                                                    "every trial)",
                                                    kStatusTopRows, rows.size())));
      CHECK_THAT(table, Catch::Contains(fmt::format("... {} more trials not listed", rows.size() - kStatusTopRows)));
      // Every trial counted by state, listed or not.
      std::map<std::string, int> by_state;
      for (const auto& r : rows) ++by_state[r.state];
      std::string counts;
      for (const auto& [state, n] : by_state) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, state);
      CHECK_THAT(table, Catch::Contains(fmt::format("\n{} trials: {}\n", rows.size(), counts)));
      CHECK(by_state.size() >= 5);  // the property above is about several states

      // --all: every trial, in id order, and no "more" line.
      std::string all = RenderStatusTable(rows, names, "lm_loss", minimize, true);
      std::vector<std::string> every = KeysOf(all);
      REQUIRE(every.size() == rows.size());
      for (size_t i = 0; i < rows.size(); ++i) CHECK(every[i] == rows[i].trial_key);
      CHECK(all.find("more trials not listed") == std::string::npos);
    }
  }
}

TEST_CASE("status of a study of up to kStatusAllRows trials lists every one, as before", "[cli]") {
  std::vector<reports::TrialRow> rows = RandomRows(kStatusAllRows, 9);
  std::string table = RenderStatusTable(rows, {"micro_batch_size"}, "lm_loss", true, false);
  std::vector<std::string> keys = KeysOf(table);
  REQUIRE(keys.size() == rows.size());
  for (size_t i = 0; i < rows.size(); ++i) CHECK(keys[i] == rows[i].trial_key);
  CHECK(table.find("more trials not listed") == std::string::npos);
  CHECK(table.find(" best of ") == std::string::npos);
}

}  // namespace
}  // namespace sweep::cli

namespace sweep::cli {

TEST_CASE("status of a study with many configurations lists the best and the baseline's; --all every one",
          "[cli][repeats]") {
  std::vector<reports::TrialRow> rows;
  for (int c = 0; c < 60; ++c) {
    for (int seed = 0; seed < 2; ++seed) {
      reports::TrialRow r;
      r.trial_key = fmt::format("t-{}-{}", c, seed);
      r.param_values = {ParamCell(std::to_string(c)), ParamCell(std::to_string(seed))};
      r.state = "completed";
      r.objective_value = c + 0.1 * seed;
      rows.push_back(r);
    }
  }
  reports::ConfigRanking r = reports::RankConfigurations({"lr", "seed"}, rows, "seed", true);
  r.baseline = 45;
  std::string top = results::RenderConfigurationsText(r, kStatusTopRows);
  CHECK_THAT(top, Catch::Contains(" lr=19 "));
  CHECK_THAT(top, !Catch::Contains(" lr=20 "));
  CHECK_THAT(top, Catch::Contains(" lr=45 ") && Catch::Contains("[baseline]"));
  CHECK_THAT(top, Catch::Contains("... 39 more configurations (status --all)"));
  std::string all = results::RenderConfigurationsText(r);
  CHECK_THAT(all, Catch::Contains(" lr=59 ") && !Catch::Contains("more configurations"));
}

}  // namespace sweep::cli
