// Submitter: new trials to Slurm. Each trial's script is rendered once per attempt; the #SBATCH
// lines of that rendering are its group key, and trials with the same key go as one job array
// throttled to the free slots (slurm::GroupByDirectives); the rest, or every trial with arrays off,
// one job each. The intent is stored before sbatch runs (Reconciler finds the job after a crash);
// a full submit quota pauses submission, a refusal of the study's settings stops the run, any other
// refusal fails the trials. The user's jobs stay within a share of the site's MaxJobCount in the
// controller (kMaxJobCountShare), counted with squeue --me when the study is large enough for it to
// bind: the rest goes in as jobs end.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "run/run_context.h"
#include "slurm/sbatch_script.h"
#include "slurm/slurm_client.h"
#include "store/store.h"

namespace sweep::run {

// The share of slurmctld's MaxJobCount one study may fill: the rest is for the other users' jobs
// (beyond MaxJobCount slurmctld takes no job from anybody) and for the slack of an ended job's record
// (it counts until MinJobAge, and Slurm purges once a minute). docs/sites.md.
inline constexpr double kMaxJobCountShare = 0.5;
// The share is the user's, not each study's: two studies of one user must not fill MaxJobCount
// together. A study whose own jobs in the controller stay within this part of the share (at least
// one job) submits without counting the user's other jobs: small studies pay no extra squeue, and
// the other half of MaxJobCount absorbs them. Beyond it, a tick that submits counts them first
// (SlurmClient::CountMyJobs), at most once per kUserCountIntervalS: a count can only drop when
// slurmctld purges ended jobs, once a minute. A tick without a fresh count submits only up to this
// part and within the room the last count left; one whose count could not be read, only up to this
// part (fail closed). docs/sites.md.
inline constexpr double kUncountedShare = 0.1;
inline constexpr double kUserCountIntervalS = 60;

class Submitter {
 public:
  explicit Submitter(RunContext& ctx) : ctx_(ctx) {}

  // Whether a full submit quota holds submission back now: after a refusal, until this tick's
  // squeue shows fewer of the study's jobs queued or running than when sbatch refused (a slot
  // freed), or, when the study had none then (the user's other jobs filled the quota), until a
  // timer (60 s, doubling to 900 s) has passed.
  bool Paused(const std::vector<store::TrialRecord>& trials) const;
  // max_concurrent less the trials that have a job (or are being submitted).
  int FreeSlots(const std::vector<store::TrialRecord>& trials) const;
  // Submits new trials of this study file, up to `free_slots` running at once and [cluster]
  // queue_ahead waiting. kInvalidArgument: sbatch refused the study's settings (nothing marked).
  Status SubmitNew(std::vector<store::TrialRecord>& trials, int free_slots, TickReport& report);

  // The names a job of this study is found by again (Reconciler).
  std::string JobName(const std::string& trial_key) const;
  // "slurmsweep:study=S:trial=T:attempt=N": set as the job's --comment, matched on reconcile.
  std::string CommentTag(const store::TrialRecord& trial) const;
  // "slurmsweep:study=S:array=NAME": the comment of an array job (every task carries it).
  std::string ArrayTag(const std::string& array_name) const;

  // A trial's script for its attempt and log as stored in `trial`: the template rendered with its
  // values, with slurmsweep's #SBATCH header, the telemetry sampler and the start mark.
  Result<std::string> Script(const store::TrialRecord& trial) const;

 private:
  // A trial's next attempt rendered once, its log path standing as a marker until the job array it
  // joins is known; `key`: the #SBATCH lines of that rendering (empty: they name the log; alone).
  struct Rendered {
    store::TrialRecord* trial;
    std::string body;
    std::optional<std::vector<std::string>> key;
  };
  Result<Rendered> RenderNext(store::TrialRecord& trial) const;
  // The rendered body with the trial's log path (now set) in place of the marker.
  Result<std::string> WithLog(const Rendered& r) const;
  Result<std::string> RenderBody(const store::TrialRecord& trial, const std::string& log_path, int attempt) const;
  Result<std::string> AddHeader(const store::TrialRecord& trial, std::string_view body) const;
  // One sbatch for `batch`: a plain job for one trial, else a job array of tasks sharing `key`,
  // throttled to `throttle` running tasks.
  Status SubmitBatch(std::vector<Rendered*>& batch, const std::optional<std::vector<std::string>>& key, int throttle,
                     TickReport& report);
  // The #SBATCH header's study-wide part: work dir, partition/account/qos and [job] resources.
  slurm::SbatchHeader Header() const;

  RunContext& ctx_;
  // The study's jobs that have not ended (each array task counts, as Slurm's submit quotas count
  // them), as this tick's squeue left the trials.
  static int LiveJobs(const std::vector<store::TrialRecord>& trials);
  // Submit quotas (QOSMaxSubmitJobPerUserLimit, ...): after a refusal, the study's live jobs then
  // (quota_jobs_; 0: none of its own) and a timer: until the timer, no more than quota_jobs_ of the
  // study's jobs at once; with none of its own, no sbatch at all. Arrays no larger than chunk_
  // until one is accepted again.
  double paused_until_ = 0;
  double pause_s_ = 0;
  int quota_jobs_ = 0;
  int chunk_ = 0;
  // This SubmitNew call: the study's live jobs so far (this tick's squeue, plus what went in), and
  // whether sbatch refused for a quota (the rest waits).
  int live_ = 0;
  bool refused_ = false;
  // The site's limits (scontrol show config), read once, before the run's first submission.
  std::optional<slurm::SiteLimits> site_;
  bool share_said_ = false;  // the MaxJobCount share held trials back: said once a run
  // The user's jobs (squeue --me): when last counted, and what was said once a run (the user's other
  // jobs shrank the study's room; the count could not be read).
  double user_counted_at_ = -1e300;
  int64_t counted_left_ = 0;  // the room the last count found that this study has not filled since
  bool others_said_ = false;
  bool user_unread_said_ = false;
  // The study's jobs slurmctld holds now, as it counts them for MaxJobCount: each queued or running
  // job or array task, and each ended one until Slurm purges it (MinJobAge, checked each minute).
  int ControllerJobs(const std::vector<store::TrialRecord>& trials) const;
  // How many more jobs may go in under the share of MaxJobCount (kMaxJobCountShare): the study's own
  // jobs within it, and the user's (counted, see kUncountedShare) too; said once a run when it holds
  // `wanting` new trials back. kUnavailable: the count found slurmctld not answering.
  Result<int64_t> ShareRoom(const std::vector<store::TrialRecord>& trials, int64_t wanting);
  // The room the user's jobs leave under `share` when the study would hold more than the uncounted
  // part of it: one count (rate-limited); without a fresh count, the uncounted part only.
  Result<int64_t> UserRoom(const std::vector<store::TrialRecord>& trials, int share, int own, int64_t room);
};

// Back to "new" with the attempt and array fields undone, for a submission that never happened.
void UndoSubmission(store::TrialRecord& trial);

}  // namespace sweep::run
