// The job array's dispatch script, and which scripts can share an array; see sbatch_script.h.
#include <fmt/format.h>

#include <algorithm>

#include "slurm/sbatch_script.h"

namespace sweep::slurm {

std::string ArrayDispatchBody(std::string_view study_name, const std::vector<std::string>& directives,
                              const std::vector<ArrayTask>& tasks) {
  std::string dispatch;  // task index -> that trial's script
  for (size_t i = 0; i < tasks.size(); ++i) {
    const ArrayTask& t = tasks[i];
    std::string task_log_name = t.task_log.substr(t.task_log.find_last_of('/') + 1);
    dispatch += fmt::format("  {}) ln -sfn {} {}; exec {} ;;\n", i, ShellQuote(task_log_name), ShellQuote(t.trial_log),
                            ShellQuote(t.script_path));
  }
  std::string body = "#!/bin/bash\n";
  for (const auto& d : directives) body += d + "\n";
  body += fmt::format(
      "# slurmsweep job array of study {}: each task execs its trial's own script.\n"
      "case \"${{SLURM_ARRAY_TASK_ID:-}}\" in\n{}"
      "  *) echo \"slurmsweep: array task ${{SLURM_ARRAY_TASK_ID:-?}} has no trial\" >&2; exit 2 ;;\nesac\n",
      study_name, dispatch);
  return body;
}

}  // namespace sweep::slurm

namespace sweep::slurm {

std::vector<std::vector<size_t>> GroupByDirectives(const std::vector<std::optional<std::vector<std::string>>>& keys) {
  std::vector<std::vector<size_t>> groups;
  std::vector<size_t> first;  // of each group: the index whose key it has
  for (size_t i = 0; i < keys.size(); ++i) {
    auto g = std::find_if(first.begin(), first.end(), [&](size_t f) { return keys[f] && keys[f] == keys[i]; });
    if (g != first.end()) {
      groups[g - first.begin()].push_back(i);
      continue;
    }
    first.push_back(i);
    groups.push_back({i});
  }
  return groups;
}

}  // namespace sweep::slurm
