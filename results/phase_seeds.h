// Phase 2 of a two-phase study starts from phase 1's best configurations: its report's ranking,
// read once per command (study_trials.h expands the study over them).
// Layer results/ (namespace sweep::results): stored trials into views; uses the store, study, planner, reports.
#pragma once

#include "base/status.h"
#include "study/study.h"

namespace sweep::results {

// Reads phase 2's seeds (SeedConfigs) and phase 1's parameter names once, into study.seeds, so
// that SeedConfigs, ExpandStudy, ParamNames and the report's trial list no longer read phase 1's
// files. Why phase 1 cannot seed yet is kept there, not returned: commands that need the trials
// fail with it, the others (status, cancel) go on. Then expands the study once, into
// study.expanded (unset if it cannot be expanded), which ExpandStudy and StudyTrials take as data
// from then on: seeding and expansion happen once per command, not per report refresh. The
// application calls this after LoadStudy.
Status ResolveSeeds(study::Study& study);

}  // namespace sweep::results
