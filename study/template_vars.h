// The built-in template variables (version 1 of the template contract: names are only ever
// added). Parameters and [job.vars] may not reuse these names.
// Module study/: the study file; uses base/, logs/, stopping/ (and slurm/'s template renderer).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace sweep::study {

// study, trial, attempt, workdir, trial_dir, log, nodes, gpus_per_node, gpus, cpus_per_task
const std::vector<std::string>& BuiltinTemplateVars();
bool IsBuiltinTemplateVar(std::string_view name);
std::string BuiltinTemplateVarList();
// The built-ins that are absolute paths on the cluster (workdir, trial_dir, log): declared paths
// (base/params.h), as a study declares its own with `path = true`.
const std::vector<std::string>& BuiltinPathVars();

// Names usable in constraints besides the parameters: nodes, gpus_per_node, gpus.
const std::vector<std::string>& BuiltinExprVars();

}  // namespace sweep::study
