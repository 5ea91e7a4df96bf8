// Planning a study file; see phases.h.
#include "orchestrator/phases.h"

namespace sweep {

Result<Plan> PlanStudy(const Study& study) {
  auto trials = ExpandStudy(study);
  if (!trials.ok()) return trials.status();
  return PlanTrials(study, std::move(*trials));
}

}  // namespace sweep
