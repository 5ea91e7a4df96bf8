// Parameter values as text; see params.h.
#include "base/params.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string_view>
#include <type_traits>
#include <variant>

namespace sweep {

std::string ParamToString(const ParamValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) return x;
        else if constexpr (std::is_same_v<T, bool>) return x ? "true" : "false";
        else if constexpr (std::is_same_v<T, double>) return fmt::format("{}", x);
        else return std::to_string(x);
      },
      v);
}

std::optional<double> ParamCell::Number() const {
  if (!value) return std::nullopt;
  if (const auto* i = std::get_if<int64_t>(&*value)) return static_cast<double>(*i);
  if (const auto* d = std::get_if<double>(&*value); d && std::isfinite(*d)) return *d;
  return std::nullopt;
}

namespace {

bool IsSafeValueChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         std::string_view("._+-,:/=@").find(c) != std::string_view::npos;
}

}  // namespace

bool IsSafeValue(std::string_view v) { return std::all_of(v.begin(), v.end(), IsSafeValueChar); }

std::string FirstUnsafeChar(std::string_view v) {
  auto it = std::find_if_not(v.begin(), v.end(), IsSafeValueChar);
  if (it == v.end()) return "";
  unsigned char c = static_cast<unsigned char>(*it);
  if (c == ' ') return "' ' (a blank)";
  if (c == '\t') return "a tab";
  if (c == '\n' || c == '\r') return fmt::format("byte 0x{:02x} (a line break)", c);
  if (c < 0x20 || c >= 0x7f) return fmt::format("byte 0x{:02x}", c);
  return fmt::format("'{}'", static_cast<char>(c));
}

bool IsNumberText(std::string_view v) {
  size_t i = 0;
  auto digits = [&] {
    size_t from = i;
    while (i < v.size() && v[i] >= '0' && v[i] <= '9') ++i;
    return i > from;
  };
  if (i < v.size() && (v[i] == '-' || v[i] == '+')) ++i;
  bool whole = digits();
  bool fraction = false;
  if (i < v.size() && v[i] == '.') {
    ++i;
    fraction = digits();
  }
  if (!whole && !fraction) return false;
  if (i < v.size() && (v[i] == 'e' || v[i] == 'E')) {
    ++i;
    if (i < v.size() && (v[i] == '-' || v[i] == '+')) ++i;
    if (!digits()) return false;
  }
  return i == v.size();
}

bool ReadsAsOption(std::string_view v) { return !v.empty() && v.front() == '-' && !IsNumberText(v); }

bool LeavesItsPlace(std::string_view v) {
  size_t begin = 0;
  while (begin <= v.size()) {
    size_t end = v.find_first_of("/=", begin);
    if (end == std::string_view::npos) end = v.size();
    if (v.substr(begin, end - begin) == "..") return true;
    // An absolute path: the value's start, or a part right after '='.
    bool part_start = begin == 0 || v[begin - 1] == '=';
    if (part_start && end < v.size() && v[end] == '/' && end == begin) return true;
    begin = end + 1;
  }
  return false;
}

std::string ValueShapeProblem(std::string_view v, bool option, bool path) {
  if (!option && ReadsAsOption(v))
    return "begins with '-' and is not a number, so a program would read it as an option";
  if (!path && LeavesItsPlace(v)) {
    return "is an absolute path or climbs with '..', so as a path it would leave the directory a template puts it "
           "in";
  }
  return "";
}

}  // namespace sweep
