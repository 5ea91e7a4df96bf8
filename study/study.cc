// What a study asks for: the defaults and derived values of study.h's structs. The loader that
// fills them from a study file is loader.h.
#include "study/study.h"

#include "base/trial_state.h"

namespace sweep::study {

std::map<std::string, int> DefaultRetries() {
  std::map<std::string, int> retry;
  for (const TrialStateInfo& s : kTrialStates) {
    if (s.default_retries) retry.emplace(s.name, *s.default_retries);
  }
  return retry;
}

int Objective::LoggedWithin() const {
  if (logged_within >= 0) return logged_within;
  for (std::string_view eval : {"val", "eval", "test"}) {
    if (metric.compare(0, eval.size(), eval) == 0) return 0;
  }
  return 10;
}

}  // namespace sweep::study
