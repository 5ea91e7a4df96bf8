// `run --as-job`: the controller runs as a small Slurm job of its own, so that a login node's reaper
// cannot end a sweep that lasts days. The job asks for an early signal (--signal=B:USR1@N); on it the
// run ends its tick, submits its successor (--dependency=afterany on itself, so the two never overlap),
// releases its lock and ends. Inside, Slurm's commands are at hand: transport = "local".
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <string>

#include "base/status.h"
#include "study/study.h"

namespace sweep::run {

struct ControllerJobOptions {
  std::string time = "01:00:00";  // the controller job's --time (each job; the sweep may last many)
  int signal_s = 120;             // USR1 this long before the limit: time to end a tick and submit
};

// True in the process the controller script starts (it exports SLURMSWEEP_CONTROLLER_JOB) inside a job.
bool InsideControllerJob();

// Writes DATABASE.controller.sbatch and submits it with the local sbatch (`--as-job` runs where Slurm's
// commands are: a login node), after job `after` has ended when given. Partition and account are the
// study's. The job id is recorded in DATABASE.controller for `status`. Returns the job id.
Result<std::string> SubmitControllerJob(const study::Study& study, const std::string& study_path,
                                        const ControllerJobOptions& options, const std::string& after = "");

// The controller's last job id (DATABASE.controller), or "" when the study never ran as a job.
std::string ControllerJobOf(const study::Study& study);

}  // namespace sweep::run
