// The alphabets of a study's names, paths and values; see names.h.
#include "study/names.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "base/params.h"

namespace sweep::study {

bool IsIdentifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
}

bool IsSafeName(std::string_view s) {
  // A name becomes one path component (WORKDIR/scripts/NAME): "." and ".." would name another folder.
  if (s == "." || s == "..") return false;
  return !s.empty() && s.size() <= 64 && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
  });
}

bool IsSafePath(std::string_view s) {
  return !s.empty() && s.front() == '/' && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' || c == '/';
  });
}

std::string UnsafeValueMessage(std::string_view value, std::string_view name, std::string_view form) {
  std::string shown(value.substr(0, 60));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return fmt::format(
      "the value '{}{}' has {}, outside the safe alphabet of template values ({}); a value outside it could "
      "become code where a template puts it. If '{}' must carry such text, declare it: {} (the template may then "
      "use it only as a variable's value, {}={{{{{}}}}}, or in a comment; \"$VAR\" then goes to the program as an "
      "argument or in its environment, never into a here-document or a program's text)",
      shown, value.size() > 60 ? "..." : "", FirstUnsafeChar(value), kSafeValueAlphabet, name, form,
      [&] {
        std::string up;
        for (char c : name) up.push_back(static_cast<char>(std::toupper(static_cast<unsigned char>(c))));
        return up;
      }(),
      name);
}

std::string ValueShapeMessage(std::string_view value, std::string_view name, std::string_view problem,
                              std::string_view form) {
  bool option = !value.empty() && value.front() == '-' && problem.find("option") != std::string_view::npos;
  std::string declared = fmt::format(fmt::runtime(form), option ? "option = true" : "path = true");
  std::string shown(value.substr(0, 60));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return fmt::format("the value '{}{}' {}. If '{}' must carry such values, declare it: {} ({})", shown,
                     value.size() > 60 ? "..." : "", problem, name, declared,
                     option ? fmt::format("the template may then put it only after '--' or as an option's own value, "
                                          "--flag={{{{{}}}}}",
                                          name)
                            : std::string("the value is then normalised, and `plan` shows it"));
}

}  // namespace sweep::study
