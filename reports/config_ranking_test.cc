// Tests of the ranking of configurations over seeds: grouping by the values without the seed,
// mean and spread of the completed repeats, whether the best two are separable, configs.csv.
#include <catch2/catch.hpp>

#include "reports/config_ranking.h"

using namespace sweep::reports;

namespace {

TrialRow Row(const std::string& key, const std::string& lr, const std::string& seed, const std::string& state,
             std::optional<double> value) {
  TrialRow r;
  r.trial_key = key;
  r.param_values = {sweep::ParamCell(lr), sweep::ParamCell(seed)};
  r.state = state;
  r.objective_value = value;
  return r;
}

}  // namespace

TEST_CASE("configurations are ranked by the mean of their completed repeats, with their spread", "[repeats]") {
  // lr 0.1 has the best single trial (0.50) but the worse mean; a failed repeat adds no value.
  std::vector<TrialRow> rows = {
      Row("t-a0", "0.1", "0", "completed", 0.50),        Row("t-a1", "0.1", "1", "completed", 0.90),
      Row("t-b0", "0.01", "0", "completed", 0.60),       Row("t-b1", "0.01", "1", "completed", 0.62),
      Row("t-c0", "0.001", "0", "failed", std::nullopt), Row("t-c1", "0.001", "1", "running", 0.8),
  };
  ConfigRanking r = RankConfigurations({"lr", "seed"}, rows, "seed", /*minimize=*/true);
  CHECK(r.param_names == std::vector<std::string>{"lr"});
  REQUIRE(r.groups.size() == 3);
  CHECK(r.groups[0].param_values == std::vector<std::string>{"0.01"});
  CHECK(*r.groups[0].mean == Approx(0.61));
  CHECK(*r.groups[0].std == Approx(0.0141421).epsilon(1e-4));
  CHECK(r.groups[0].seeds == std::vector<std::string>{"0", "1"});
  CHECK(r.groups[1].param_values == std::vector<std::string>{"0.1"});
  CHECK(*r.groups[1].mean == Approx(0.70));
  CHECK(*r.groups[1].min == Approx(0.50));
  CHECK(*r.groups[1].max == Approx(0.90));
  CHECK_FALSE(r.groups[2].mean);  // no completed repeat: after the ranked
  CHECK(r.groups[2].ended == 1);
  CHECK(r.groups[2].rows == std::vector<size_t>{4, 5});
  // [0.60, 0.62] lies inside [0.50, 0.90]: not separable, and the text says how to get more seeds.
  REQUIRE(r.best_two_separable);
  CHECK_FALSE(*r.best_two_separable);
  CHECK_THAT(SeparabilityText(r), Catch::Contains("not separable"));
  CHECK_THAT(SeparabilityText(r), Catch::Contains("--repeat-top 2"));

  // Maximised: the other way round.
  ConfigRanking max = RankConfigurations({"lr", "seed"}, rows, "seed", /*minimize=*/false);
  CHECK(max.groups[0].param_values == std::vector<std::string>{"0.1"});
}

TEST_CASE("the best two are separable only when their ranges over seeds do not overlap", "[repeats]") {
  std::vector<TrialRow> rows = {
      Row("t-a0", "0.1", "0", "completed", 0.50),
      Row("t-a1", "0.1", "1", "completed", 0.52),
      Row("t-b0", "0.01", "0", "completed", 0.60),
  };
  ConfigRanking one = RankConfigurations({"lr", "seed"}, rows, "seed", true);
  CHECK_FALSE(one.best_two_separable);  // one completed repeat of the runner-up: not known
  CHECK_THAT(SeparabilityText(one), Catch::Contains("cannot be told apart yet"));
  rows.push_back(Row("t-b1", "0.01", "1", "completed", 0.64));
  ConfigRanking two = RankConfigurations({"lr", "seed"}, rows, "seed", true);
  REQUIRE(two.best_two_separable);
  CHECK(*two.best_two_separable);
  CHECK_THAT(SeparabilityText(two), Catch::StartsWith("the best two are separable"));
}

TEST_CASE("a trial stored without a seed is its configuration's seed 0", "[repeats]") {
  std::vector<TrialRow> rows = {Row("t-a", "0.1", "", "completed", 0.5), Row("t-b", "0.1", "1", "completed", 0.7)};
  ConfigRanking r = RankConfigurations({"lr", "seed"}, rows, "seed", true);
  REQUIRE(r.groups.size() == 1);
  CHECK(r.groups[0].seeds == std::vector<std::string>{"0", "1"});
  CHECK(*r.groups[0].mean == Approx(0.6));
}

TEST_CASE("configs.csv has one row per configuration, best mean first", "[repeats][csv]") {
  std::vector<TrialRow> rows = {
      Row("t-a0", "0.1", "0", "completed", 0.5),         Row("t-a1", "0.1", "1", "completed", 0.7),
      Row("t-b0", "0.01", "0", "completed", 0.25),       Row("t-b1", "0.01", "1", "failed", std::nullopt),
      Row("t-c0", "0.001", "0", "failed", std::nullopt),
  };
  ConfigRanking r = RankConfigurations({"lr", "seed"}, rows, "seed", true);
  CHECK(RenderConfigsCsv(r, rows) ==
        "rank,lr,repeats,completed,mean,std,min,max,seeds,trial_keys\n"
        "1,0.01,2,1,0.25,,0.25,0.25,0 1,t-b0 t-b1\n"
        "2,0.1,2,2,0.6,0.14142135623730948,0.5,0.7,0 1,t-a0 t-a1\n"
        ",0.001,1,0,,,,,0,t-c0\n");
}

TEST_CASE("the report's section names the ranking's spread and separability", "[repeats][html]") {
  std::vector<TrialRow> rows = {
      Row("t-a0", "0.1", "0", "completed", 0.5),
      Row("t-a1", "0.1", "1", "completed", 0.7),
      Row("t-b0", "0.01", "0", "completed", 0.55),
      Row("t-b1", "0.01", "1", "completed", 0.75),
  };
  std::string html = RenderConfigsSection(RankConfigurations({"lr", "seed"}, rows, "seed", true), "loss");
  CHECK_THAT(html, Catch::Contains("<section id=\"configurations\">"));
  CHECK_THAT(html, Catch::Contains("<td>1</td><td>lr=0.1</td><td>0.6</td><td>0.14</td><td>[0.5, 0.7]</td>"));
  CHECK_THAT(html, Catch::Contains("The best two are not separable"));
}
