// Job states: Slurm's many state names mapped to the few a sweep acts on.
// Part of the module's face through slurm_client.h, which includes it.
// Module slurm/ (namespace sweep::slurm): reaching the cluster and speaking Slurm; uses base/ only.
#pragma once

#include <string>
#include <string_view>

namespace sweep::slurm {

enum class JobState {
  kUnknown,  // not seen (yet) or the scheduler could not be asked
  kPending,
  kRunning,  // includes CONFIGURING, COMPLETING, SUSPENDED, STAGE_OUT: not ended yet
  kCompleted,
  kFailed,
  kCancelled,
  kTimeout,
  kOutOfMemory,
  kNodeFail,
  kPreempted,
};

// Lower-case names stored in the database and shown to users: "pending", "out_of_memory", ...
std::string_view JobStateName(JobState state);
// Inverse of JobStateName; kUnknown for anything else.
JobState JobStateFromName(std::string_view name);

// Maps Slurm's state text as printed by squeue, scontrol or sacct ("RUNNING", "CANCELLED by 0",
// "OUT_OF_MEMORY", "PD", ...). Requeued and held states count as pending: the job will run again.
JobState FromSlurmState(std::string_view slurm_state);

bool IsTerminal(JobState state);

}  // namespace sweep::slurm
