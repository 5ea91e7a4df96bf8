// Tests of the ranking of configurations over seeds: grouping by the values without the seed,
// mean and spread of the completed repeats, whether the best two are separable, configs.csv.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "reports/config_ranking.h"

#include <cmath>
#include <random>

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
  CHECK(*r.groups[0].sem == Approx(0.01));  // 0.0141 / sqrt(2)
  // 0.61 against 0.70 with sds 0.014 and 0.28 over two seeds each: Welch's test cannot tell them
  // apart, and the text says whether more seeds could.
  REQUIRE(r.best_two_separable);
  CHECK_FALSE(*r.best_two_separable);
  CHECK_THAT(SeparabilityText(r), Catch::Contains("not separable"));
  CHECK_THAT(SeparabilityText(r), Catch::Contains("Welch's t test"));

  // Maximised: the other way round.
  ConfigRanking max = RankConfigurations({"lr", "seed"}, rows, "seed", /*minimize=*/false);
  CHECK(max.groups[0].param_values == std::vector<std::string>{"0.1"});
}

TEST_CASE("the best two are told apart by a test on their means, once each has two repeats", "[repeats]") {
  std::vector<TrialRow> rows = {
      Row("t-a0", "0.1", "0", "completed", 0.50),
      Row("t-a1", "0.1", "1", "completed", 0.52),
      Row("t-b0", "0.01", "0", "completed", 0.60),
  };
  ConfigRanking one = RankConfigurations({"lr", "seed"}, rows, "seed", true);
  CHECK_FALSE(one.best_two_separable);  // one completed repeat of the runner-up: not known
  CHECK_THAT(SeparabilityText(one), Catch::Contains("cannot be told apart yet"));
  rows.push_back(Row("t-b1", "0.01", "1", "completed", 0.64));
  // {0.50, 0.52} against {0.60, 0.64}: t = 4.9 on about 1.6 degrees of freedom, p = 0.07: not yet.
  ConfigRanking two = RankConfigurations({"lr", "seed"}, rows, "seed", true);
  REQUIRE(two.best_two_separable);
  CHECK_FALSE(*two.best_two_separable);
  CHECK_THAT(SeparabilityText(two), Catch::StartsWith("the best two are not separable yet"));
  rows.push_back(Row("t-a2", "0.1", "2", "completed", 0.51));
  rows.push_back(Row("t-b2", "0.01", "2", "completed", 0.62));
  ConfigRanking three = RankConfigurations({"lr", "seed"}, rows, "seed", true);
  REQUIRE(three.best_two_separable);
  CHECK(*three.best_two_separable);
  CHECK_THAT(SeparabilityText(three), Catch::StartsWith("the best two are separable"));
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
        "rank,lr,repeats,completed,mean,std,min,max,seeds,trial_keys,sem\n"
        "1,0.01,2,1,0.25,,0.25,0.25,0 1,t-b0 t-b1,\n"
        "2,0.1,2,2,0.6,0.14142135623730948,0.5,0.7,0 1,t-a0 t-a1,0.09999999999999998\n"
        ",0.001,1,0,,,,,0,t-c0,\n");
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
  CHECK_THAT(
      html, Catch::Contains(
                "<td>1</td><td class=\"config\">lr=0.1</td><td>0.6</td><td>0.10</td><td>0.14</td><td>[0.5, 0.7]</td>"));
  CHECK_THAT(html, Catch::Contains("The best two are not separable"));
}

TEST_CASE("a large study's configurations section lists the best and the baseline's, and counts the rest",
          "[repeats][html]") {
  std::vector<TrialRow> rows;
  for (int c = 0; c < 30; ++c)
    for (int seed = 0; seed < 2; ++seed)
      rows.push_back(
          Row(fmt::format("t-{}-{}", c, seed), std::to_string(c), std::to_string(seed), "completed", c + 0.1 * seed));
  ConfigRanking r = RankConfigurations({"lr", "seed"}, rows, "seed", true);
  r.baseline = 27;  // the 28th best: listed at its rank although beyond the first five
  std::string html = RenderConfigsSection(r, "loss", 5);
  CHECK_THAT(html, Catch::Contains("<td>5</td><td class=\"config\">lr=4</td>"));
  CHECK_THAT(html, !Catch::Contains("<td>6</td>"));
  CHECK_THAT(html, Catch::Contains("<td>28</td><td class=\"config\">lr=27</td>"));
  CHECK_THAT(html, Catch::Contains("24 more configurations not listed here; configs.csv lists every one"));
  CHECK_THAT(RenderConfigsSection(r, "loss"), !Catch::Contains("more configurations not listed"));
}

namespace {

std::vector<TrialRow> Sample(const std::string& lr, const std::vector<double>& values) {
  std::vector<TrialRow> rows;
  for (size_t i = 0; i < values.size(); ++i)
    rows.push_back(Row("t-" + lr + "-" + std::to_string(i), lr, std::to_string(i), "completed", values[i]));
  return rows;
}

ConfigRanking RankTwo(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<TrialRow> rows = Sample("0.1", a), more = Sample("0.2", b);
  rows.insert(rows.end(), more.begin(), more.end());
  return RankConfigurations({"lr", "seed"}, rows, "seed", /*minimize=*/true);
}

}  // namespace

TEST_CASE("Student's t distribution: two-sided p-values against closed forms", "[repeats]") {
  // df = 1 is Cauchy: P(|T| > 1) = 1/2. df = 2: P(|T| > t) = 1 - t / sqrt(2 + t^2).
  CHECK(StudentTwoSidedP(1.0, 1) == Approx(0.5).epsilon(1e-9));
  CHECK(StudentTwoSidedP(2.0, 2) == Approx(1 - 2 / std::sqrt(6.0)).epsilon(1e-9));
  CHECK(StudentTwoSidedP(-2.0, 2) == Approx(1 - 2 / std::sqrt(6.0)).epsilon(1e-9));
  CHECK(StudentTwoSidedP(0.0, 7) == Approx(1.0));
  // Tables: t(0.975; 10) = 2.228, t(0.975; 30) = 2.042.
  CHECK(StudentTwoSidedP(2.228, 10) == Approx(0.05).epsilon(1e-3));
  CHECK(StudentTwoSidedP(2.042, 30) == Approx(0.05).epsilon(2e-3));
  // Property: p falls as |t| grows, for any df.
  for (double df : {1.5, 3.0, 7.7, 40.0}) {
    double last = 1.0;
    for (double t = 0.25; t < 8; t += 0.25) {
      double p = StudentTwoSidedP(t, df);
      CHECK(p < last);
      CHECK(p > 0);
      last = p;
    }
  }
}

TEST_CASE("Welch's test of the means: its t, degrees of freedom, and how many more seeds would tell", "[repeats]") {
  // {1, 2, 3} against {3, 4, 5}: means 2 and 4, sd 1 each: se = sqrt(2/3), t = 2.449, df = 4,
  // p = 0.070: not separable yet; with one more seed each (same means and sds: t = 2.83, df = 6,
  // p = 0.030) it would be.
  ConfigRanking r = RankTwo({1, 2, 3}, {3, 4, 5});
  const Separability& s = r.separability;
  CHECK(s.difference == Approx(2));
  CHECK(s.se == Approx(std::sqrt(2.0 / 3)));
  CHECK(s.t == Approx(2.4495).epsilon(1e-4));
  CHECK(s.df == Approx(4));
  CHECK(s.p == Approx(0.0705).epsilon(5e-3));
  CHECK(s.verdict == Separability::Verdict::kMoreSeeds);
  CHECK(s.more_seeds == 1);
  CHECK_FALSE(*r.best_two_separable);
  CHECK_THAT(SeparabilityText(r), Catch::Contains("about 1 more seed each would tell them apart"));
  CHECK_THAT(SeparabilityText(r), Catch::Contains("--repeat-top 2 --repeats 4"));

  // Unequal spreads and sizes: the Welch-Satterthwaite df, not n1 + n2 - 2.
  Separability w = WelchTest(0, 1, 4, 1, 3, 9);
  double va = 1.0 / 4, vb = 9.0 / 9;
  CHECK(w.df == Approx((va + vb) * (va + vb) / (va * va / 3 + vb * vb / 8)));

  // A gap far below the noise: more seeds will not tell them apart.
  ConfigRanking same = RankTwo({1, 2, 3}, {1.01, 2.01, 3.01});
  CHECK(same.separability.verdict == Separability::Verdict::kNotWithSeeds);
  CHECK_THAT(SeparabilityText(same), Catch::Contains("more seeds will not tell them apart"));

  // Clearly apart.
  ConfigRanking apart = RankTwo({1, 1.1, 0.9}, {2, 2.1, 1.9});
  CHECK(apart.separability.verdict == Separability::Verdict::kSeparable);
  CHECK(apart.separability.p < 0.001);
  CHECK(*apart.best_two_separable);
}

TEST_CASE("Overlapping ranges no longer mean not separable: ten seeds tell a small gap apart", "[repeats]") {
  // Issue 41: ranges only widen with more seeds, so a range test could never separate these two.
  std::vector<double> a = {0.50, 0.60, 0.55, 0.52, 0.58, 0.54, 0.56, 0.53, 0.57, 0.55};
  std::vector<double> b;
  for (double v : a) b.push_back(v + 0.04);
  ConfigRanking r = RankTwo(a, b);
  REQUIRE(*r.groups[0].max > *r.groups[1].min);  // the ranges overlap
  CHECK(r.separability.verdict == Separability::Verdict::kSeparable);
  CHECK(*r.best_two_separable);
  // With three of those seeds each the same gap is not significant yet, and more seeds are the way.
  ConfigRanking few = RankTwo({0.50, 0.60, 0.55}, {0.54, 0.64, 0.59});
  CHECK(few.separability.verdict == Separability::Verdict::kMoreSeeds);
  CHECK(few.separability.more_seeds > 1);
}

TEST_CASE("The verdict follows the test by property: random samples, p against the verdict", "[repeats]") {
  std::mt19937 rng(41);
  std::normal_distribution<double> noise(0, 1);
  for (int round = 0; round < 300; ++round) {
    size_t na = 2 + rng() % 6, nb = 2 + rng() % 6;
    double gap = (rng() % 100) / 25.0, sa = 0.1 + (rng() % 30) / 10.0, sb = 0.1 + (rng() % 30) / 10.0;
    std::vector<double> a, b;
    for (size_t i = 0; i < na; ++i) a.push_back(sa * noise(rng));
    for (size_t i = 0; i < nb; ++i) b.push_back(gap + sb * noise(rng));
    ConfigRanking r = RankTwo(a, b);
    const Separability& s = r.separability;
    INFO("round " << round);
    REQUIRE(s.verdict != Separability::Verdict::kUnknown);
    CHECK((s.verdict == Separability::Verdict::kSeparable) == (s.p < 0.05));
    CHECK(s.p >= 0);
    CHECK(s.p <= 1);
    CHECK(*r.groups[0].mean <= *r.groups[1].mean);
    // The standard error of a mean is its sd over sqrt(n).
    for (const ConfigGroup& g : r.groups)
      CHECK(*g.sem == Approx(*g.std / std::sqrt(static_cast<double>(g.values.size()))));
    if (s.verdict == Separability::Verdict::kMoreSeeds) {
      CHECK(s.more_seeds >= 1);
      CHECK(s.more_seeds <= kMaxMoreSeeds);
    }
  }
}
