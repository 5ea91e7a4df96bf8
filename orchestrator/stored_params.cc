// Reading a trial's stored parameters back; see stored_params.h.
#include "orchestrator/stored_params.h"

#include <nlohmann/json.hpp>

namespace sweep {
namespace {

nlohmann::json ParseObject(const std::string& params_json) {
  auto params = nlohmann::json::parse(params_json, nullptr, false);
  return params.is_object() ? params : nlohmann::json::object();
}

// A stored parameter value (JSON) as the study file would have given it.
ParamValue FromJson(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

}  // namespace

Params StoredParams(const std::string& params_json, const std::vector<std::string>& names) {
  nlohmann::json params = ParseObject(params_json);
  Params out;
  for (const auto& name : names) {
    if (params.contains(name)) out.emplace_back(name, FromJson(params[name]));
  }
  return out;
}

}  // namespace sweep
