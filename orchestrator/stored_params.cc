// Reading a trial's stored parameters back; see stored_params.h.
#include "orchestrator/stored_params.h"

#include <nlohmann/json.hpp>

namespace sweep::orchestrator {
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

// The text the reports show: a string as it is, a number or boolean as JSON writes it.
std::string TextOf(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return "";
  return j.dump();
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

std::vector<ParamCell> StoredParamCells(const std::string& params_json, const std::vector<std::string>& names) {
  nlohmann::json params = ParseObject(params_json);
  std::vector<ParamCell> cells;
  cells.reserve(names.size());
  for (const auto& name : names) {
    auto it = params.find(name);
    if (it == params.end() || it->is_null()) cells.emplace_back();
    else cells.emplace_back(FromJson(*it), TextOf(*it));
  }
  return cells;
}

bool StoredParamsMatch(const std::string& params_json, const std::string& wanted_json) {
  auto wanted = nlohmann::json::parse(wanted_json, nullptr, false);
  if (!wanted.is_object()) return false;
  nlohmann::json params = ParseObject(params_json);
  for (const auto& [name, value] : wanted.items()) {
    auto it = params.find(name);
    if (it == params.end() || !(*it == value || TextOf(*it) == TextOf(value))) return false;
  }
  return true;
}

}  // namespace sweep::orchestrator
