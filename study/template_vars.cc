// The built-in template and expression variables; see template_vars.h.
#include "study/template_vars.h"

#include <algorithm>

namespace sweep::study {

const std::vector<std::string>& BuiltinTemplateVars() {
  static const std::vector<std::string> kVars = {"study", "trial",         "attempt", "workdir", "trial_dir",
                                                 "log",   "gpus_per_node", "nodes",   "gpus",    "cpus_per_task"};
  return kVars;
}

bool IsBuiltinTemplateVar(std::string_view name) {
  const auto& v = BuiltinTemplateVars();
  return std::find(v.begin(), v.end(), name) != v.end();
}

std::string BuiltinTemplateVarList() {
  std::string out;
  for (const auto& v : BuiltinTemplateVars()) out += (out.empty() ? "" : ", ") + v;
  return out;
}

const std::vector<std::string>& BuiltinPathVars() {
  static const std::vector<std::string> kVars = {"workdir", "trial_dir", "log"};
  return kVars;
}

const std::vector<std::string>& BuiltinExprVars() {
  static const std::vector<std::string> kVars = {"nodes", "gpus_per_node", "gpus"};
  return kVars;
}

}  // namespace sweep::study
