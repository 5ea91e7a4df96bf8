// Planning a study file; see phases.h.
#include "orchestrator/phases.h"

namespace sweep {

PlanJob PlanJobOf(const Study& study) {
  PlanJob job;
  job.vars = study.job.vars;
  job.nodes = study.job.nodes;
  job.gpus_per_node = study.job.gpus_per_node;
  return job;
}

Result<Plan> PlanTrials(const Study& study, std::vector<TrialSpec> trials) {
  return PlanTrials(PlanJobOf(study), std::move(trials));
}

Result<Plan> PlanStudy(const Study& study) {
  auto trials = ExpandStudy(study);
  if (!trials.ok()) return trials.status();
  return PlanTrials(study, std::move(*trials));
}

}  // namespace sweep
