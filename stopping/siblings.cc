// Evaluating trials apart from their siblings; see siblings.h.
#include "stopping/siblings.h"

namespace sweep::stopping {

std::vector<StopDecision> EvaluateApartFromSiblings(StoppingState& state, std::vector<TrialProgress> trials,
                                                    const std::vector<std::string>& config_of) {
  // The rules take rivals only from other configurations (TrialProgress::configuration):
  // one evaluation whatever the number of repeats.
  for (size_t i = 0; i < trials.size() && i < config_of.size(); ++i) trials[i].configuration = config_of[i];
  return state.Evaluate(trials);
}

}  // namespace sweep::stopping
