// Planning a study file; see phases.h.
#include "results/phases.h"

namespace sweep::results {

planner::PlanJob PlanJobOf(const study::Study& study) {
  planner::PlanJob job;
  job.vars = study.job.vars;
  job.nodes = study.job.nodes;
  job.gpus_per_node = study.job.gpus_per_node;
  return job;
}

Result<planner::Plan> PlanTrials(const study::Study& study, std::vector<TrialSpec> trials) {
  return planner::PlanTrials(PlanJobOf(study), std::move(trials));
}

Result<planner::Plan> PlanStudy(const study::Study& study) {
  auto trials = ExpandStudy(study);
  if (!trials.ok()) return trials.status();
  return PlanTrials(study, std::move(*trials));
}

std::vector<PlanVerdict> PlanVerdicts(const std::vector<TrialSpec>& specs, const planner::Plan* plan) {
  std::vector<PlanVerdict> out;
  if (!plan) {
    for (const TrialSpec& t : specs) {
      out.push_back({&t, t.dropped_reason.empty() ? "run" : "dropped", t.dropped_reason, std::nullopt});
    }
    return out;
  }
  for (const planner::PlanRow& r : plan->rows) {
    const char* verdict = r.verdict == planner::PlanRow::Verdict::kFits         ? "run"
                          : r.verdict == planner::PlanRow::Verdict::kConstraint ? "dropped"
                          : r.verdict == planner::PlanRow::Verdict::kRule       ? "rule"
                                                                                : "oom";
    std::optional<double> gib;
    if (r.memory) gib = r.predicted_bytes / (1024.0 * 1024 * 1024);
    out.push_back({&r.trial, verdict, r.reason, gib});
  }
  return out;
}

}  // namespace sweep::results
