// A study's trials grouped into configurations, for studies whose trials carry a seed ([search]
// repeats, seed_var: study/repeats.h): the ranking `status`, the report and configs.csv show, the
// repeats `run --repeat-top` adds, the trials of earlier --repeat-top runs that a study file's
// expansion does not list, and the two places the run loop must see a configuration as one point:
// the tpe sampler (one observation per configuration, its mean once every repeat has ended) and
// early stopping (a repeat is never judged against its own siblings).
// Module orchestrator/: the application; may use every module.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "reports/repeats.h"
#include "sampler/tpe.h"
#include "stopping/early_stop.h"
#include "store/store.h"
#include "study/space.h"
#include "study/study.h"

namespace sweep::orchestrator {

// The configurations of `rows` (CollectTrialRows), ranked by their mean over seeds; nullopt for
// a study whose trials carry no seed.
std::optional<reports::ConfigRanking> RankStudyConfigurations(const study::Study& study,
                                                              const std::vector<reports::TrialRow>& rows);

// `status`'s lines under the trial table: one per configuration (rank, mean ± sd, range,
// completed / repeats, values), then the separability sentence.
std::string RenderConfigurationsText(const reports::ConfigRanking& ranking);
// `status --json`'s "configurations" member: {seed_var, best_two_separable, ranking: [{rank,
// params, repeats, completed, mean, std, min, max, seeds, trials}]}. `params`: each row's stored
// values (typed), as StudyView has them; a configuration's are its first trial's without the seed.
nlohmann::json ConfigurationsJson(const reports::ConfigRanking& ranking, const std::vector<reports::TrialRow>& rows,
                                  const std::vector<nlohmann::json>& params);

// Each configuration of the study (ConfigIdentity -> its TrialSpec without a seed): a grid's or
// random study's from its expansion, a tpe study's from its stored trials.
Result<std::map<std::string, TrialSpec>> StudyConfigurations(const study::Study& study,
                                                             const std::vector<store::TrialRecord>& stored);

// The stored trials that a seeded study's expansion (`expanded`) does not list but that are
// repeats of one of its configurations with another seed (added by `run --repeat-top`): their
// specs, so a later `run` tracks, resumes and reports them as the study's own.
std::vector<TrialSpec> StoredRepeats(const study::Study& study, const std::vector<TrialSpec>& expanded,
                                     const std::vector<store::TrialRecord>& stored);

// `run --repeat-top K --repeats N`: the K best configurations so far (by mean over seeds) get the
// seeds of 0 .. N-1 they do not have yet, as new trials of the study; the trials that ran stay.
// Running it again adds nothing (unless the ranking changed). Returns the trials added.
// FailedPrecondition for a study whose template has no seed.
Result<std::vector<store::TrialRecord>> AddTopRepeats(store::Store& store, const study::Study& study, int64_t study_id,
                                                      int top, int repeats, double now);

// `run --repeat-top K [--repeats N]` before the run starts: AddTopRepeats with N (default twice
// [search] repeats, at least 2), and what it added as a line for the user. InvalidArgument for
// --repeats without --repeat-top; FailedPrecondition before the study has run.
Result<std::string> RepeatTop(store::Store& store, const study::Study& study, int top, int repeats, double now);

// The tpe sampler's history of this study: one observation per configuration (in the order of
// its first trial), from its repeats' observations: pending while any repeat is; else the mean of
// the valued ones (complete when none was pruned, partial otherwise); else infeasible if any
// repeat was, else ignored. `observations`: (ConfigIdentity, observation) per trial, in trial order.
std::vector<sampler::Observation> MergeRepeats(
    const std::vector<std::pair<std::string, sampler::Observation>>& observations);

// How many configurations (each `repeats` trials) a tpe study proposes for `free` slots: at least
// one while a slot is free, so a study whose repeats outnumber max_concurrent still moves.
int ConfigsForSlots(int free, int repeats);

// The enqueued configurations ([[search.enqueue]]) of a tpe study that are not in `own` yet
// (ConfigIdentity of its trials), in file order, at most `k`, as points of its space.
std::vector<sampler::Point> PendingEnqueued(const study::Study& study, const std::set<std::string>& own, int k);

// StoppingState::Evaluate, except that no trial is judged against a sibling (a repeat of its own
// configuration, `config_of[i]` of trials[i]): one evaluation with each trial's configuration set, so
// every rule takes its rivals from other configurations only (stopping/trial_progress.h).
std::vector<stopping::StopDecision> EvaluateApartFromSiblings(stopping::StoppingState& state,
                                                              std::vector<stopping::TrialProgress> trials,
                                                              const std::vector<std::string>& config_of);

}  // namespace sweep::orchestrator
