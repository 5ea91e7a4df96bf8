// Configurations over seeds: a study with [search] repeats runs each configuration as several
// trials that differ only in a seed; what the report, `status` and configs.csv rank is the
// configuration, by the mean of its completed repeats' final values, with their spread, and
// whether the best two can be told apart at all.
//
// Separability is deliberately plain: each configuration's interval is the range [min, max] of its
// completed repeats' final values; the best two are separable when those ranges do not overlap,
// not separable when they do, and not known while either has fewer than two completed repeats. A
// range is wider than a confidence interval of the mean, so "separable" is the cautious claim.
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
};

struct ConfigRanking {
  std::vector<std::string> param_names;  // without the seed
  std::string seed_name;
  std::vector<ConfigGroup> groups;  // best mean first; configurations without a value after, in row order
  // The best two: their [min, max] ranges do not overlap (true), overlap (false), or either has
  // fewer than two completed repeats (nullopt). Also nullopt with fewer than two ranked.
  std::optional<bool> best_two_separable;
};

// Groups `rows` (their param_values in `param_names`' order, one of them `seed_name`) by their
// values without the seed, and ranks the groups by the mean of their completed repeats'
// objective_value (lower first when `minimize`).
ConfigRanking RankConfigurations(const std::vector<std::string>& param_names, const std::vector<TrialRow>& rows,
                                 std::string_view seed_name, bool minimize);

// One sentence on the best two: "not separable: ...", "separable: ...", or why it is not known.
// Empty with fewer than two configurations with a value.
std::string SeparabilityText(const ConfigRanking& ranking);

// configs.csv, version 1 columns:
//   rank,<param names without the seed...>,repeats,completed,mean,std,min,max,seeds,trial_keys
// (rank is empty for a configuration without a completed repeat; seeds and trial_keys are
// space-separated). `rows`: those RankConfigurations grouped.
inline constexpr int kConfigsCsvVersion = 1;
std::string RenderConfigsCsv(const ConfigRanking& ranking, const std::vector<TrialRow>& rows);

// The HTML report's section "Configurations over seeds" (id "configurations"): the ranking table
// and the separability sentence. `metric`: the objective's name.
std::string RenderConfigsSection(const ConfigRanking& ranking, std::string_view metric);

}  // namespace sweep::reports
