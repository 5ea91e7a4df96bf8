// SlurmClient: submit, query and cancel jobs through a Transport, and parse what the Slurm
// commands print. The scheduler is shared: Query asks about ALL of a study's jobs with one
// squeue call, and falls back to one sacct call for the jobs squeue no longer knows.
// Module slurm/ (namespace sweep::slurm): reaching the cluster and speaking Slurm; uses base/ only.
// One of its three public headers (transport.h, slurm_client.h with job_state.h, sbatch_script.h);
// the rest is internal.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "slurm/job_state.h"
#include "slurm/transport.h"

namespace sweep::slurm {

struct JobInfo {
  std::string job_id;  // "123" or "123_4" for an array task
  JobState state = JobState::kUnknown;
  std::string slurm_state;  // as printed, e.g. "CANCELLED by 0"
  std::string reason;       // squeue's reason ("NonZeroExitCode", "Priority", "None")
  std::string exit_code;    // "exit:signal" as sacct prints it, e.g. "42:0" or "0:15"; empty if unknown
  std::string name;
  std::string start_time, end_time;  // ISO times as Slurm prints them, or "N/A"/"Unknown"
  std::string comment;
  int restarts = -1;  // how often Slurm started the job again (requeue); -1: not known (sacct)
};

// Parsers for recorded or live output. Lines that do not fit are counted, never fatal.
// squeue -h -O with the fields of kSqueueFormat (slurm_client.cc), '|'-separated.
std::vector<JobInfo> ParseSqueue(std::string_view out, size_t* malformed = nullptr);
// sacct -X -n -P -o JobID,State,ExitCode,Reason,JobName,Start,End,Comment
std::vector<JobInfo> ParseSacct(std::string_view out, size_t* malformed = nullptr);
// "scontrol -o show job [ID]": one job per line of Key=Value pairs.
std::vector<JobInfo> ParseScontrolShowJob(std::string_view out);
// "sbatch --parsable" prints "ID" or "ID;CLUSTER".
Result<std::string> ParseSbatchParsable(std::string_view out);

// True when sbatch refused a job because a submit quota is full (QOSMaxSubmitJobPerUserLimit,
// AssocMaxSubmitJobLimit, ...): the job is fine, the cluster wants fewer queued now.
bool IsSubmitLimit(std::string_view err);

// True when sbatch refused a job for a setting every job of the study shares (partition, account,
// QOS, time limit, GRES): no job of the study can be submitted until the study file is fixed.
bool IsStudyWideRefusal(std::string_view err);

// What `scontrol show config` says of the limits a large study meets; 0: not known.
struct SiteLimits {
  int max_array_size = 0;  // an array's indices must stay below it (MaxArraySize)
  // slurmctld holds at most this many job records (MaxJobCount), each array task one, an ended job
  // among them until it is MinJobAge seconds old; beyond, sbatch waits ("temporarily unable").
  int max_job_count = 0;
  int min_job_age_s = 300;  // Slurm's default when not read
  std::string unread;       // why `scontrol show config` answered nothing (its exit and stderr); empty: read
};
SiteLimits ParseSiteLimits(std::string_view config);

// "123_4" -> "123"; "123" -> "123".
std::string ArrayBaseId(std::string_view job_id);

// True for the errors Slurm clients print when slurmctld is down or overloaded: retry later.
bool IsSchedulerUnavailable(std::string_view err);

class SlurmClient {
 public:
  // Counts of Slurm commands issued, so tests and logs can prove the load per tick.
  struct Stats {
    int sbatch = 0, squeue = 0, sacct = 0, scontrol = 0, scancel = 0;
    int total() const { return sbatch + squeue + sacct + scontrol + scancel; }
  };

  explicit SlurmClient(Transport& transport) : transport_(transport) {}

  // sbatch --parsable SCRIPT; the job id (of an array: the array's id). kUnavailable when the
  // controller cannot be reached or sbatch gave no answer in time (the caller looks for the job
  // before submitting again), kResourceExhausted when a submit quota is
  // full (the caller waits), kInvalidArgument when sbatch rejects the script (with the cause
  // kStudyWideRefusal when it refuses a setting every job of the study shares: IsStudyWideRefusal).
  Result<std::string> Submit(const std::string& script_path);

  // The state of every job in `job_ids` ("123", or "123_4" for a task of array 123): one squeue
  // call, plus one sacct call for those squeue no longer lists (if accounting exists). Jobs found
  // nowhere are absent from the map.
  Result<std::map<std::string, JobInfo>> Query(const std::vector<std::string>& job_ids);

  // Jobs whose name is one of `names`: one squeue call, and for names squeue no longer knows
  // (purged after MinJobAge) one sacct call if the cluster has accounting. Used on start-up to find
  // jobs submitted just before a crash, before anything is submitted again.
  Result<std::vector<JobInfo>> FindByName(const std::vector<std::string>& names);

  // This user's jobs that have not ended whose name begins with `prefix` (a study's "ss-NAME-") and
  // whose --comment begins with `comment_prefix` (a study's "slurmsweep:study=NAME:", so that study
  // "a" never counts the jobs of study "a-b"): one squeue call. Before a study's first submission and
  // before it takes over the name's claim, so that the jobs of a database that was deleted never run
  // beside the new one's.
  Result<std::vector<JobInfo>> LiveJobsNamed(const std::string& prefix, const std::string& comment_prefix = "");

  // How many jobs of this user slurmctld holds, as it counts them toward MaxJobCount: every job and
  // every array task (slurm.conf: each task counts as one job even before it has a record of its own;
  // -r lists each pending task on a line of its own), ended ones until purged (-t all). One squeue
  // call printing job ids only. kUnavailable when slurmctld does not answer, kFailedPrecondition
  // (with squeue's answer) when squeue refuses the query.
  Result<int> CountMyJobs();

  // The nodes job `job_id` asks for by name (its ReqNodeList, e.g. from --nodelist) that the
  // cluster does not have: `scontrol show node` does not find them (never declared, removed, or
  // State=FUTURE). One `scontrol show job` call, and one `scontrol show node` per node asked for.
  Result<std::vector<std::string>> UnknownRequestedNodes(const std::string& job_id);

  // A node's State as `scontrol show node` prints it ("IDLE", "DOWN*+DRAIN", ...): one call. Used
  // only when Slurm restarted a job, to tell a node failure from a preemption.
  Result<std::string> NodeState(const std::string& node);

  // The site's limits from `scontrol show config` (all unknown when it fails). One call.
  Result<SiteLimits> ReadSiteLimits();

  // One scancel call for all `job_ids`. `pending_only`: `scancel --state=PENDING`, which leaves a
  // job that started since its state was last read alone (Slurm checks the state when it cancels).
  Status Cancel(const std::vector<std::string>& job_ids, bool pending_only = false);

  const Stats& stats() const { return stats_; }

 private:
  Result<CommandOutput> RunSlurm(const std::string& command, int* counter);

  Transport& transport_;
  Stats stats_;
  bool sacct_unavailable_ = false;  // learned once, so we stop asking
};

}  // namespace sweep::slurm
