// A study's trials grouped into configurations, for studies whose trials carry a seed ([search]
// repeats, seed_var: study/repeats.h): the ranking `status`, the report and configs.csv show. What the run loop
// adds (the repeats of --repeat-top, the tpe sampler's one observation per configuration) is in
// repeat_top.h and tpe_trials.h.
// Layer results/ (namespace sweep::results): stored trials into views; uses the store, study, planner, reports.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/config_ranking.h"
#include "store/store.h"
#include "study/space.h"
#include "study/study.h"

namespace sweep::results {

// The configurations of `rows` (CollectTrialRows), ranked by their mean over seeds, with the
// configuration of the study's [report] baseline (a trial key, or a table of values: the
// configuration of the first trial holding them); nullopt for a study whose trials carry no seed.
// The one place that groups trials into configurations: `status`, `status --json`, the report, its
// CSVs and --repeat-top read this.
std::optional<reports::ConfigRanking> RankStudyConfigurations(const study::Study& study,
                                                              const std::vector<reports::TrialRow>& rows);

// `status`'s lines under the trial table: one per configuration (rank, mean ± sd, range,
// completed / repeats, values), then the separability sentence. Beyond `max_rows` only the
// baseline's is listed, and the rest are counted.
std::string RenderConfigurationsText(const reports::ConfigRanking& ranking, size_t max_rows = static_cast<size_t>(-1));
// `status --json`'s "configurations" member: {seed_var, best_two_separable, separability: {test:
// "welch", verdict, difference, se, t, df, p, more_seeds}, recommendation, runner_up, baseline,
// ranking: [{rank, params, repeats, completed, mean, sem, std, min, max, iters_per_s, seeds,
// trials}]}. recommendation and runner_up are the first two of the ranking (null when absent),
// baseline the baseline's configuration (null without one) with "is_recommendation"; each is a
// ranking entry. `params`: each row's stored values (typed), as StudyView has them; a
// configuration's are its first trial's without the seed.
nlohmann::json ConfigurationsJson(const reports::ConfigRanking& ranking, const std::vector<reports::TrialRow>& rows,
                                  const std::vector<nlohmann::json>& params);

}  // namespace sweep::results
