// Repeats of one configuration (trials that differ only in a seed) are siblings: no rule judges a
// trial against its own siblings, whatever the number of repeats.
// Module stopping/ (namespace sweep::stopping): early stopping rules; uses base/ only.
#pragma once

#include <string>
#include <vector>

#include "stopping/early_stop.h"

namespace sweep::stopping {

// StoppingState::Evaluate, except that no trial is judged against a sibling (a repeat of its own
// configuration, `config_of[i]` of trials[i]): one evaluation with each trial's configuration set, so
// every rule takes its rivals from other configurations only (stopping/trial_progress.h).
std::vector<StopDecision> EvaluateApartFromSiblings(StoppingState& state, std::vector<TrialProgress> trials,
                                                    const std::vector<std::string>& config_of);

}  // namespace sweep::stopping
