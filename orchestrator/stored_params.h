// A trial's parameters as the store holds them (TrialRecord::params_json, which study/space.h's
// ParamsJson writes), read back typed: the one reader of that JSON on the report side and for
// phase 2's seeds, so that a value is decoded once and no caller parses a number from text.
// Module orchestrator/: the application; may use every module.
#pragma once

#include <string>
#include <vector>

#include "base/params.h"

namespace sweep::orchestrator {

// The values of `names` in that order, as the study file gave them (integer, float, text or
// boolean); a name the trial has no value for is left out.
Params StoredParams(const std::string& params_json, const std::vector<std::string>& names);

// The same values as the reports carry them (base/params.h's ParamCell), with the text the store
// keeps ("1.0" for a float 1, not the template's "1"); an empty cell for a name the trial has no
// value for.
std::vector<ParamCell> StoredParamCells(const std::string& params_json, const std::vector<std::string>& names);

// Whether the trial's stored values hold each value of `wanted_json`, a JSON object of parameter
// values ([report] baseline given as a table): equal as JSON, or as text (a number may be given as
// text). False when `wanted_json` is no JSON object.
bool StoredParamsMatch(const std::string& params_json, const std::string& wanted_json);

}  // namespace sweep::orchestrator
