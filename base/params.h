// A trial's parameters: the values a study's search space gives each configuration, and the
// trial they make. Filled in by the study (study/space.h), proposed by the samplers, judged by
// the planner (planner/), stored and reported by the application.
// Module base/: uses the standard library only.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace sweep {

// A parameter value: TOML integer, float, string or boolean.
using ParamValue = std::variant<int64_t, double, std::string, bool>;
// As the template and the report show it: integers in full, floats shortest round-trip,
// booleans "true"/"false".
std::string ParamToString(const ParamValue& v);

// Name and value, in the study's parameter order.
using Params = std::vector<std::pair<std::string, ParamValue>>;

struct TrialSpec {
  std::string key;             // "t-" + 12 hex digits of a hash of the values
  Params params;               // in the study's parameter order
  std::string params_json;     // keys sorted, for the store
  std::string dropped_reason;  // non-empty: a constraint failed
};

}  // namespace sweep
