// Planning a study file: its trials (ExpandStudy, study_trials.h: phase 2's come from phase 1's
// report) through the memory planner (planner/).
// Layer results/ (namespace sweep::results): stored trials into views; uses the store, study, planner, reports.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "results/study_trials.h"
#include "planner/planner.h"
#include "study/study.h"

namespace sweep::results {

// What the planner (planner/planner.h) reads of the study: [job.vars], nodes and GPUs per node.
planner::PlanJob PlanJobOf(const study::Study& study);

// PlanTrials (planner/planner.h) of `trials` for the study's job.
Result<planner::Plan> PlanTrials(const study::Study& study, std::vector<TrialSpec> trials);
// `slurmsweep plan`: PlanTrials over ExpandStudy.
Result<planner::Plan> PlanStudy(const study::Study& study);

// One configuration as `plan` shows it: "run", "dropped" (a constraint), "rule" or "oom" (the
// memory plan), why, and the predicted GPU memory when the parallelism rules passed.
struct PlanVerdict {
  const TrialSpec* trial = nullptr;
  const char* verdict = "run";
  std::string reason;
  std::optional<double> predicted_gib;
};
// The plan's rows, or without a plan (no [job.vars] model) `specs` with their constraints only.
std::vector<PlanVerdict> PlanVerdicts(const std::vector<TrialSpec>& specs, const planner::Plan* plan);

}  // namespace sweep::results
