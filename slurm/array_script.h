// The job array's own script: each task execs the script of the trial it stands for, so every
// trial keeps its own rendered script (and #SBATCH header tag) while Slurm sees one sbatch.
// Module slurm/: reaching the cluster and speaking Slurm; uses base/ only.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sweep::slurm {

// One task of an array, by index: where Slurm writes its log, the trial's usual log name (a
// symbolic link to the task's log, for people browsing logs/), and the trial's own script.
struct ArrayTask {
  std::string task_log;     // absolute; only its base name is linked
  std::string trial_log;    // absolute
  std::string script_path;  // absolute, executable
};

// The array script's body, before AddSbatchHeader adds slurmsweep's header: a shebang, the
// template's own #SBATCH `directives` (shared by every task), and a case statement from
// SLURM_ARRAY_TASK_ID to the task's trial script; an index with no task exits 2. Every path is
// shell-quoted.
std::string ArrayDispatchBody(std::string_view study_name, const std::vector<std::string>& directives,
                              const std::vector<ArrayTask>& tasks);

}  // namespace sweep::slurm

namespace sweep::slurm {

// Scripts that carry the same #SBATCH directives (SbatchDirectives) can share a job array: the
// indices of `keys` grouped by equal key, groups in order of their first member; an empty key
// (std::nullopt: a script that must not share, e.g. one whose directives name its own log) is a
// group of its own.
std::vector<std::vector<size_t>> GroupByDirectives(const std::vector<std::optional<std::vector<std::string>>>& keys);

}  // namespace sweep::slurm
