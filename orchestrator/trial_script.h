// One trial's template variables, and the check that every trial of a study renders before
// anything is submitted (a value its template cannot carry is found at load, not when its
// trial comes up).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "study/space.h"
#include "study/study.h"

namespace sweep {

// The variables a trial's template sees: [job.vars], the trial's parameters and the built-ins
// (template_vars.h) for `attempt` with its log at `log_path`.
std::map<std::string, std::string> TrialTemplateVars(const Study& study, const TrialSpec& spec, int attempt,
                                                     const std::string& log_path);

// Renders the template for every trial not dropped, as its first attempt: trial key -> the
// renderer's refusal (file:line: placeholder, place, why), for the trials that cannot be.
std::map<std::string, std::string> RenderRefusals(const Study& study, const std::vector<TrialSpec>& specs);

}  // namespace sweep
