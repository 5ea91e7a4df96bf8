// Mapping of Slurm job states; see job_state.h.
#include "slurm/job_state.h"

#include <array>
#include <utility>

namespace sweep::slurm {
namespace {

constexpr std::array<std::pair<JobState, std::string_view>, 10> kNames = {{
    {JobState::kUnknown, "unknown"},
    {JobState::kPending, "pending"},
    {JobState::kRunning, "running"},
    {JobState::kCompleted, "completed"},
    {JobState::kFailed, "failed"},
    {JobState::kCancelled, "cancelled"},
    {JobState::kTimeout, "timeout"},
    {JobState::kOutOfMemory, "out_of_memory"},
    {JobState::kNodeFail, "node_fail"},
    {JobState::kPreempted, "preempted"},
}};

// Long and short (squeue %t) forms. Slurm 22.05, slurm/slurm.h job_state_string().
constexpr std::array<std::pair<std::string_view, JobState>, 46> kSlurm = {{
    {"PENDING", JobState::kPending},
    {"PD", JobState::kPending},
    {"REQUEUED", JobState::kPending},
    {"RQ", JobState::kPending},
    {"REQUEUE_HOLD", JobState::kPending},
    {"RH", JobState::kPending},
    {"REQUEUE_FED", JobState::kPending},
    {"RF", JobState::kPending},
    {"RESV_DEL_HOLD", JobState::kPending},
    {"RD", JobState::kPending},
    {"SPECIAL_EXIT", JobState::kPending},
    {"SE", JobState::kPending},
    {"RUNNING", JobState::kRunning},
    {"R", JobState::kRunning},
    {"CONFIGURING", JobState::kRunning},
    {"CF", JobState::kRunning},
    {"COMPLETING", JobState::kRunning},
    {"CG", JobState::kRunning},
    {"SUSPENDED", JobState::kRunning},
    {"S", JobState::kRunning},
    {"STOPPED", JobState::kRunning},
    {"ST", JobState::kRunning},
    {"STAGE_OUT", JobState::kRunning},
    {"SO", JobState::kRunning},
    {"SIGNALING", JobState::kRunning},
    {"SI", JobState::kRunning},
    {"RESIZING", JobState::kRunning},
    {"RS", JobState::kRunning},
    {"COMPLETED", JobState::kCompleted},
    {"CD", JobState::kCompleted},
    {"FAILED", JobState::kFailed},
    {"F", JobState::kFailed},
    {"BOOT_FAIL", JobState::kNodeFail},
    {"BF", JobState::kNodeFail},
    {"DEADLINE", JobState::kTimeout},
    {"DL", JobState::kTimeout},
    {"CANCELLED", JobState::kCancelled},
    {"CA", JobState::kCancelled},
    {"REVOKED", JobState::kCancelled},
    {"RV", JobState::kCancelled},
    {"TIMEOUT", JobState::kTimeout},
    {"TO", JobState::kTimeout},
    {"OUT_OF_MEMORY", JobState::kOutOfMemory},
    {"OOM", JobState::kOutOfMemory},
    {"NODE_FAIL", JobState::kNodeFail},
    {"NF", JobState::kNodeFail},
}};

}  // namespace

std::string_view JobStateName(JobState state) {
  for (const auto& [s, name] : kNames) {
    if (s == state) return name;
  }
  return "unknown";
}

JobState JobStateFromName(std::string_view name) {
  for (const auto& [s, n] : kNames) {
    if (n == name) return s;
  }
  return JobState::kUnknown;
}

JobState FromSlurmState(std::string_view text) {
  // "CANCELLED by 0", "CANCELLED+": keep the first word, drop flags.
  size_t end = text.find_first_of(" +");
  std::string_view word = text.substr(0, end);
  if (word == "PREEMPTED" || word == "PR") return JobState::kPreempted;
  for (const auto& [name, s] : kSlurm) {
    if (name == word) return s;
  }
  return JobState::kUnknown;
}

bool IsTerminal(JobState state) {
  switch (state) {
    case JobState::kUnknown:
    case JobState::kPending:
    case JobState::kRunning:
      return false;
    default:
      return true;
  }
}

}  // namespace sweep::slurm
