// The alphabets a study file's names, paths and values must keep, and the message that says why a
// value outside the safe alphabet is refused. Internal to study/ (study.cc, repeats.cc).
// Module study/: may use base/.
#pragma once

#include <string>
#include <string_view>

namespace sweep::study {

// A C identifier: a letter or '_', then letters, digits and '_' (parameter and variable names).
bool IsIdentifier(std::string_view s);
// 1-64 of [A-Za-z0-9_.-], not "." or "..": a name that reaches a file name or a job name.
bool IsSafeName(std::string_view s);
// An absolute path of [A-Za-z0-9_./-] only.
bool IsSafePath(std::string_view s);
// Why `value` of `name` is refused (it leaves the safe alphabet of template values), and the
// declaration `form` that makes it text instead.
std::string UnsafeValueMessage(std::string_view value, std::string_view name, std::string_view form);
// Why `value` of `name` is refused for its shape (`problem`: base/params.h ValueShapeProblem), and
// the declaration that lifts it: `form` with "{}" where `option = true` or `path = true` goes.
std::string ValueShapeMessage(std::string_view value, std::string_view name, std::string_view problem,
                              std::string_view form);

}  // namespace sweep::study
