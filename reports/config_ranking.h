// Configurations over seeds: a study with [search] repeats runs each configuration as several
// trials that differ only in a seed; what the report, `status` and configs.csv rank is the
// configuration, by the mean of its completed repeats' final values, with their spread, and
// whether the best two can be told apart at all.
//
// Separability is a test on the means, not on the ranges (a range only widens with more seeds, so
// it could never separate two configurations): Welch's t test of the best two configurations'
// means, two-sided at the 5% level, with their sample standard deviations (n - 1) and the
// Welch-Satterthwaite degrees of freedom. When the difference is not significant, the same
// difference and standard deviations are projected to k more seeds each: the smallest k up to
// kMaxMoreSeeds that makes it significant is "about k more seeds would tell them apart"; none is
// "more seeds will not" (the gap is small against the noise). Not known while either configuration
// has fewer than two completed repeats.
// Module reports/: rendering plain data into reports; uses base/ only.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reports/csv.h"

namespace sweep::reports {

struct ConfigGroup {
  std::vector<std::string> param_values;      // the configuration's values, without the seed
  std::vector<size_t> rows;                   // its trials: indices into the rows grouped, in row order
  std::vector<std::string> seeds;             // of those trials, in the same order
  std::vector<double> values;                 // final objective of each completed repeat
  int ended = 0;                              // repeats that ended (completed or not)
  std::optional<double> mean, std, min, max;  // of `values`; std (n - 1) needs two
  std::optional<double> sem;                  // standard error of the mean: std / sqrt(n)
  std::optional<double> iters_per_s;          // mean throughput of its repeats that logged one
  int with_throughput = 0;                    // how many did
};

// The Welch test of the best two configurations' means (see above).
struct Separability {
  enum class Verdict {
    kUnknown,       // fewer than two ranked, or fewer than two completed repeats in one of the two
    kSeparable,     // p < 0.05
    kMoreSeeds,     // not yet: about `more_seeds` more each would tell them apart
    kNotWithSeeds,  // not, and more seeds (up to kMaxMoreSeeds each) will not
  };
  Verdict verdict = Verdict::kUnknown;
  double difference = 0;  // |mean of the best - mean of the runner-up|
  double se = 0;          // standard error of that difference
  double t = 0, df = 0, p = 1;
  int more_seeds = 0;  // kMoreSeeds: more repeats of each
};
inline constexpr int kMaxMoreSeeds = 50;

// Welch's t test of two samples' means (each of two or more values); also used by the unit tests
// against textbook values. more_seeds as Separability's.
Separability WelchTest(double mean_a, double sd_a, size_t n_a, double mean_b, double sd_b, size_t n_b);
// Two-sided p-value of Student's t with `df` degrees of freedom (df > 0).
double StudentTwoSidedP(double t, double df);

struct ConfigRanking {
  std::vector<std::string> param_names;  // without the seed
  std::string seed_name;
  std::vector<ConfigGroup> groups;  // best mean first; configurations without a value after, in row order
  // The best two by Welch's test: separable (true), not (false), or not known (nullopt).
  std::optional<bool> best_two_separable;
  Separability separability;
  // The configuration of the study's baseline trial ([report] baseline), when it names one that is
  // here: index into `groups`. Set by the caller that knows the baseline (results/configurations.h).
  std::optional<size_t> baseline;
};

// Groups `rows` (their param_values in `param_names`' order, one of them `seed_name`) by their
// values without the seed, and ranks the groups by the mean of their completed repeats'
// objective_value (lower first when `minimize`).
ConfigRanking RankConfigurations(const std::vector<std::string>& param_names, const std::vector<TrialRow>& rows,
                                 std::string_view seed_name, bool minimize);

// A configuration's values as text: "lr=0.1 momentum=0.9".
std::string ConfigText(const ConfigRanking& ranking, const ConfigGroup& group);
// "0.1465 ± 0.0021 (n = 5)": the mean over completed repeats ± its standard error.
std::string MeanText(const ConfigGroup& group);
// The index into ranking.groups of the configuration holding the row `row`, if any.
std::optional<size_t> GroupOfRow(const ConfigRanking& ranking, size_t row);

// One sentence on the best two: "not separable: ...", "separable: ...", or why it is not known.
// Empty with fewer than two configurations with a value.
std::string SeparabilityText(const ConfigRanking& ranking);

// configs.csv, version 2 columns:
//   rank,<param names without the seed...>,repeats,completed,mean,std,min,max,seeds,trial_keys,sem
// (version 2 added sem, the standard error of the mean, last, so that a reader of version 1's
// columns by position still reads them)
// (rank is empty for a configuration without a completed repeat; seeds and trial_keys are
// space-separated). `rows`: those RankConfigurations grouped.
inline constexpr int kConfigsCsvVersion = 2;
std::string RenderConfigsCsv(const ConfigRanking& ranking, const std::vector<TrialRow>& rows);

// The HTML report's section "Configurations over seeds" (id "configurations"): the ranking table
// and the separability sentence. `metric`: the objective's name.
// Lists the first `max_rows` configurations and the baseline's, and counts the rest.
std::string RenderConfigsSection(const ConfigRanking& ranking, std::string_view metric,
                                 size_t max_rows = static_cast<size_t>(-1));

}  // namespace sweep::reports
