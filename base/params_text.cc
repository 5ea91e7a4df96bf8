// A trial's parameter values as one text, and back; see params_text.h.
#include "base/params_text.h"

#include <nlohmann/json.hpp>
#include <variant>

namespace sweep {
namespace {

// The text as a JSON object; an empty one for a text that is not.
nlohmann::json ParseObject(std::string_view text) {
  auto j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_object() ? j : nlohmann::json::object();
}

// A stored value as the study file would have given it.
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

std::string ParamsText(const Params& params) {
  nlohmann::json j = nlohmann::json::object();  // std::map-backed: keys come out sorted
  for (const auto& [name, v] : params) {
    const std::string& key = name;  // clang < 16 cannot capture a structured binding
    std::visit([&](const auto& x) { j[key] = x; }, v);
  }
  return j.dump();
}

bool IsParamsText(std::string_view text) { return nlohmann::json::parse(text, nullptr, false).is_object(); }

Params ParamsFromText(std::string_view text, const std::vector<std::string>& names) {
  nlohmann::json params = ParseObject(text);
  Params out;
  for (const auto& name : names) {
    auto it = params.find(name);
    // null is a float that was not finite: no value, as in ParamCellsFromText.
    if (it != params.end() && !it->is_null()) out.emplace_back(name, FromJson(*it));
  }
  return out;
}

std::vector<ParamCell> ParamCellsFromText(std::string_view text, const std::vector<std::string>& names) {
  nlohmann::json params = ParseObject(text);
  std::vector<ParamCell> cells;
  cells.reserve(names.size());
  for (const auto& name : names) {
    auto it = params.find(name);
    if (it == params.end() || it->is_null()) cells.emplace_back();
    else cells.emplace_back(FromJson(*it), TextOf(*it));
  }
  return cells;
}

bool ParamsTextHolds(std::string_view text, std::string_view wanted) {
  auto want = nlohmann::json::parse(wanted, nullptr, false);
  if (!want.is_object()) return false;
  nlohmann::json params = ParseObject(text);
  for (const auto& [name, value] : want.items()) {
    auto it = params.find(name);
    if (it == params.end() || !(*it == value || TextOf(*it) == TextOf(value))) return false;
  }
  return true;
}

std::string ParamsTextWith(std::string_view text, const std::string& name, int64_t value) {
  nlohmann::json j = ParseObject(text);
  j[name] = value;
  return j.dump();
}

std::string ParamsTextWithout(std::string_view text, const std::string& name) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return std::string(text);
  j.erase(name);
  return j.dump();
}

std::optional<int64_t> IntegerInParamsText(std::string_view text, const std::string& name) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.contains(name) || !j[name].is_number_integer()) return std::nullopt;
  return j[name].get<int64_t>();
}

}  // namespace sweep
