// The states of a trial, in one table: each state's name as stored, whether the trial has ended,
// whether `run --resubmit` may start it over, and whether [retry] names it as a class with a
// default count. The run loop, the CLI, the study loader and reports/ all read this table; a new
// state is added here and nowhere else. Uses nothing but the standard library.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace sweep {

inline constexpr std::string_view kTrialNew = "new";
inline constexpr std::string_view kTrialDropped = "dropped";        // a constraint ruled it out
inline constexpr std::string_view kTrialSubmitting = "submitting";  // intent recorded, sbatch not confirmed
inline constexpr std::string_view kTrialLost = "lost";              // left the queue, no record of its end
inline constexpr std::string_view kTrialPruned = "pruned";          // stopped early by a stopping rule
inline constexpr std::string_view kTrialCudaOom = "cuda_oom";       // the log says CUDA ran out of memory
inline constexpr std::string_view kTrialDiverged = "diverged";      // loss became NaN/Inf, or the log says so
inline constexpr std::string_view kTrialSkipped = "skipped";        // would need at least the memory of a CUDA OOM

// How the report counts a state: the cost chart's and the ranking's classes.
enum class TrialOutcome { kCompleted, kRunning, kQueued, kCancelled, kFailed, kDropped };

struct TrialStateInfo {
  std::string_view name;
  bool final = false;          // ended: no job of it is live or will be submitted
  bool resubmittable = false;  // `run --resubmit STATE` starts such trials over from scratch
  // A [retry] class: how many times a trial that ended so is submitted again by default.
  // Node failures, preemption and lost jobs are the cluster's fault; an OOM or a diverged run
  // would only fail again with the same settings. nullopt: not a [retry] key.
  std::optional<int> default_retries;
  TrialOutcome outcome = TrialOutcome::kFailed;
  std::string_view label = {};  // the report's short label when not the name itself
  // The trial's settings are to blame for how it ended: the same configuration would end so
  // again (an OOM, a divergence, a script that fails), or it was ruled out before it ran
  // (dropped, skipped). What a model-based sampler learns as an infeasible region.
  bool settings_fault = false;
};

// In the order `run --resubmit` and [retry] list them; then the states a trial passes through.
// Slurm's end states (slurm/job_state.h) are here under the names the store keeps.
inline constexpr TrialStateInfo kTrialStates[] = {
    {"cancelled", true, true, std::nullopt, TrialOutcome::kCancelled},
    {"failed", true, true, 0, TrialOutcome::kFailed, {}, true},
    {"timeout", true, true, 0, TrialOutcome::kFailed, {}, true},
    {"out_of_memory", true, true, 0, TrialOutcome::kFailed, "OOM", true},  // host memory (Slurm's or the log's)
    {kTrialCudaOom, true, true, 0, TrialOutcome::kFailed, "CUDA OOM", true},
    {kTrialDiverged, true, true, 0, TrialOutcome::kFailed, {}, true},
    {"node_fail", true, true, 2, TrialOutcome::kFailed, "node failure"},
    {"preempted", true, true, 2, TrialOutcome::kFailed},
    {kTrialPruned, true, true, std::nullopt, TrialOutcome::kCancelled},
    {kTrialLost, true, true, 1, TrialOutcome::kFailed, "lost (no record)"},
    {"completed", true, false, std::nullopt, TrialOutcome::kCompleted},
    {kTrialDropped, true, false, std::nullopt, TrialOutcome::kDropped, {}, true},
    {kTrialSkipped, true, false, std::nullopt, TrialOutcome::kFailed, {}, true},
    {kTrialNew, false, false, std::nullopt, TrialOutcome::kQueued, "waiting"},
    {kTrialSubmitting, false, false, std::nullopt, TrialOutcome::kQueued},
    {"pending", false, false, std::nullopt, TrialOutcome::kQueued},
    {"running", false, false, std::nullopt, TrialOutcome::kRunning},
};

// nullptr for a name this version does not know (a newer slurmsweep's, or "unknown").
constexpr const TrialStateInfo* FindTrialState(std::string_view name) {
  for (const TrialStateInfo& s : kTrialStates) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

// Whether a trial in `state` has ended; an unknown state has not.
constexpr bool IsFinalTrialState(std::string_view state) {
  const TrialStateInfo* s = FindTrialState(state);
  return s && s->final;
}

// The states `run --resubmit` accepts, in table order.
inline std::vector<std::string_view> ResubmittableTrialStates() {
  std::vector<std::string_view> out;
  for (const TrialStateInfo& s : kTrialStates) {
    if (s.resubmittable) out.push_back(s.name);
  }
  return out;
}

// The [retry] classes, in table order.
inline std::vector<std::string_view> RetryClasses() {
  std::vector<std::string_view> out;
  for (const TrialStateInfo& s : kTrialStates) {
    if (s.default_retries) out.push_back(s.name);
  }
  return out;
}

}  // namespace sweep
