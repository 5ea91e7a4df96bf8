// The trials an earlier version of the study file made that its [space] no longer does: history for
// the report and `status`, but those still queued or running on Slurm keep their jobs and hold
// slots of max_concurrent. `plan` and `run` count them, a running controller names them when the
// file is edited under it (Runner), and `cancel --outside-space` cancels only them.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "store/store.h"
#include "study/study.h"

namespace sweep::run {

// The stored trials `study` (as loaded, seeds resolved) does not make: a grid's or random study's
// trials whose key its expansion and --repeat-top's seeds do not list; a tpe study's whose values are
// no point of its space. In the order of `stored`. An error when the file cannot be expanded.
Result<std::vector<store::TrialRecord>> TrialsOutsideSpace(const study::Study& study,
                                                           const std::vector<store::TrialRecord>& stored);

// Those of `outside` that have not ended: queued or running on Slurm, being submitted, or not
// submitted yet.
std::vector<store::TrialRecord> StillOpen(const std::vector<store::TrialRecord>& outside);

// One line (with its line break) on `outside`, or "" when there is none: how many, how many still
// hold a slot of max_concurrent, the first keys, and the command that cancels them.
std::string DescribeOutsideSpace(const study::Study& study, const std::vector<store::TrialRecord>& outside,
                                 const std::string& study_path);

}  // namespace sweep::run
