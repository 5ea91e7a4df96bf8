// A trial's template variables and the render-every-trial check; see trial_script.h.
#include "orchestrator/trial_script.h"

#include <fmt/format.h>

#include "slurm/sbatch_script.h"

namespace sweep {

std::map<std::string, std::string> TrialTemplateVars(const Study& study, const TrialSpec& spec, int attempt,
                                                     const std::string& log_path) {
  const std::string& w = study.cluster.workdir;
  std::map<std::string, std::string> vars = study.job.vars;
  for (const auto& [name, v] : spec.params) vars[name] = ParamToString(v);
  vars["study"] = study.name;
  vars["trial"] = spec.key;
  vars["attempt"] = std::to_string(attempt);
  vars["workdir"] = w;
  vars["trial_dir"] = w + "/trials/" + spec.key;
  vars["log"] = log_path;
  vars["nodes"] = std::to_string(study.job.nodes);
  vars["gpus_per_node"] = std::to_string(study.job.gpus_per_node);
  vars["gpus"] = std::to_string(study.job.nodes * study.job.gpus_per_node);
  vars["cpus_per_task"] = std::to_string(study.job.cpus_per_task);
  return vars;
}

std::map<std::string, std::string> RenderRefusals(const Study& study, const std::vector<TrialSpec>& specs) {
  std::map<std::string, std::string> out;
  for (const TrialSpec& spec : specs) {
    if (!spec.dropped_reason.empty()) continue;
    std::string log = fmt::format("{}/logs/{}.1.out", study.cluster.workdir, spec.key);
    auto r =
        slurm::RenderTemplate(study.job.template_text, study.job.template_path, TrialTemplateVars(study, spec, 1, log));
    if (!r.ok()) out[spec.key] = r.status().message();
  }
  return out;
}

}  // namespace sweep
