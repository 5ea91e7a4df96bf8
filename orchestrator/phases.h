// Two-phase studies. Phase 1 screens the throughput knobs (micro-batch size, parallelism,
// recompute, precision) with short runs; phase 2 is a study of its own whose [search] seed_from
// names phase 1: its trials are phase 1's top configurations, each crossed with phase 2's
// [space] (the convergence knobs: optimizer, learning rate), raced with early stopping on loss
// versus time and ranked by time to target. Each phase is an ordinary study (its own database,
// report and resume); the link is read once, when phase 2 expands its trials.
#pragma once

#include <vector>

#include "base/status.h"
#include "planner/planner.h"
#include "study/space.h"
#include "study/study.h"

namespace sweep {

// The seeds of `study`: phase 1's top configurations, best first, or one empty seed when the
// study has no seed_from. Phase 1 must have run to the end (kFailedPrecondition otherwise).
Result<std::vector<Params>> SeedConfigs(const Study& study);

// ExpandSpace over SeedConfigs: every caller that turns a study file into trials uses this.
Result<std::vector<TrialSpec>> ExpandStudy(const Study& study);

// `slurmsweep plan`: PlanTrials (planner/planner.h) over ExpandStudy.
Result<Plan> PlanStudy(const Study& study);

}  // namespace sweep
