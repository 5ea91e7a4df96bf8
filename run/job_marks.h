// Start marks: each run of a trial's job appends one line to a file beside its log when it starts
// (written by a few shell lines slurmsweep puts in the trial's script; nothing is installed on the
// cluster). They outlive Slurm's memory of the job: a job purged from squeue (MinJobAge) on a
// cluster without accounting is still found by its mark, and a job that Slurm ran again under the
// same id (requeue after a node failure or preemption, `scontrol requeue`) leaves one line per run.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sweep::run {

// One start of a job, as its mark line says:
// "start job=123_4 restart=1 host=n1 time=1764770000 study=S trial=T attempt=N".
struct JobStart {
  std::string job_id;  // "123", or "123_4" for a task of array 123 (as the store keeps it)
  int restart = 0;     // Slurm's SLURM_RESTART_COUNT of this run (0: the first)
  std::string host;    // the batch host
  double time = 0;     // Unix seconds
  // Whose script wrote the mark: the study, trial and the attempt it was submitted as (empty and
  // -1 in marks from before they were written).
  std::string study, trial;
  int attempt = -1;
};

// Who the script belongs to, as its start mark records it.
struct MarkIdentity {
  std::string study, trial;
  int attempt = 0;
};

// The marks file of a job logging to `log_path` (the two live side by side in WORKDIR/logs).
std::string MarksPath(const std::string& log_path);

// `script` with the shell lines that append a start mark to `marks_path` inserted after its
// leading comment block (shebang and #SBATCH lines), so sbatch still reads every directive.
// A mark that cannot be written never stops the job.
std::string WithStartMark(std::string_view script, const std::string& marks_path, const MarkIdentity& who);

// The starts recorded in a marks file, oldest first. Lines that do not parse are skipped (a
// line cut short by a node that died while writing it).
std::vector<JobStart> ParseStartMarks(std::string_view text);

// Whether the log beside these marks is not the trial's own: each run truncates the log when it
// starts, so the log is the last start's. Empty: it is this trial's (its job `job_id`, this
// study, the trial, and an attempt it was submitted as: after Slurm restarts the job the trial's
// attempt has grown by up to `job_restarts`), or the marks say nothing (none yet, or from before
// marks named their study). Else what the last start names.
std::string ForeignLogOwner(const std::vector<JobStart>& starts, const std::string& job_id, const MarkIdentity& trial,
                            int job_restarts);

}  // namespace sweep::run
