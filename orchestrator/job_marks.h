// Start marks: each run of a trial's job appends one line to a file beside its log when it starts
// (written by a few shell lines slurmsweep puts in the trial's script; nothing is installed on the
// cluster). They outlive Slurm's memory of the job: a job purged from squeue (MinJobAge) on a
// cluster without accounting is still found by its mark, and a job that Slurm ran again under the
// same id (requeue after a node failure or preemption, `scontrol requeue`) leaves one line per run.
// Module orchestrator/: the application; may use every module.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sweep {

// One start of a job, as its mark line says: "start job=123_4 restart=1 host=n1 time=1764770000".
struct JobStart {
  std::string job_id;  // "123", or "123_4" for a task of array 123 (as the store keeps it)
  int restart = 0;     // Slurm's SLURM_RESTART_COUNT of this run (0: the first)
  std::string host;    // the batch host
  double time = 0;     // Unix seconds
};

// The marks file of a job logging to `log_path` (the two live side by side in WORKDIR/logs).
std::string MarksPath(const std::string& log_path);

// `script` with the shell lines that append a start mark to `marks_path` inserted after its
// leading comment block (shebang and #SBATCH lines), so sbatch still reads every directive.
// A mark that cannot be written never stops the job.
std::string WithStartMark(std::string_view script, const std::string& marks_path);

// The starts recorded in a marks file, oldest first. Lines that do not parse are skipped (a
// line cut short by a node that died while writing it).
std::vector<JobStart> ParseStartMarks(std::string_view text);

}  // namespace sweep
