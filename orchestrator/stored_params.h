// A trial's parameters as the store holds them (TrialRecord::params_json, which study/space.h's
// ParamsJson writes), read back typed: the one reader of that JSON on the report side and for
// phase 2's seeds, so that a value is decoded once and no caller parses a number from text.
// Module orchestrator/: the application; may use every module.
#pragma once

#include <string>
#include <vector>

#include "base/params.h"

namespace sweep {

// The values of `names` in that order, as the study file gave them (integer, float, text or
// boolean); a name the trial has no value for is left out.
Params StoredParams(const std::string& params_json, const std::vector<std::string>& names);

}  // namespace sweep
