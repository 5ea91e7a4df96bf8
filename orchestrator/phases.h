// Planning a study file: its trials (ExpandStudy, report_data.h: phase 2's come from phase 1's
// report) through the memory planner (planner/).
// Module orchestrator/: the application; may use every module.
#pragma once

#include <vector>

#include "base/status.h"
#include "orchestrator/report_data.h"
#include "planner/planner.h"
#include "study/study.h"

namespace sweep {

// `slurmsweep plan`: PlanTrials (planner/planner.h) over ExpandStudy.
Result<Plan> PlanStudy(const Study& study);

}  // namespace sweep
