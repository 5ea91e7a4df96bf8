// A trial's parameters: the values a study's search space gives each configuration, and the
// trial they make. Filled in by the study (study/space.h), proposed by the samplers, judged by
// the planner (planner/), stored and reported by the application.
// Module base/: uses the standard library only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace sweep {

// A parameter value: TOML integer, float, string or boolean.
using ParamValue = std::variant<int64_t, double, std::string, bool>;
// As the template and the report show it: integers in full, floats shortest round-trip,
// booleans "true"/"false".
std::string ParamToString(const ParamValue& v);

// One trial's value of one parameter as the application hands it to reports/: typed (none when
// the trial has no value for it), with the text tables and CSV files show. Reports that need a
// number (chart axes, importance groups) read Number(), never the text: the value crosses from the
// study to the report without being printed and parsed back.
struct ParamCell {
  std::optional<ParamValue> value;
  std::string text;  // as stored (a float keeps its decimal point: "1.0"); "" for no value

  ParamCell() = default;
  ParamCell(ParamValue v, std::string shown) : value(std::move(v)), text(std::move(shown)) {}
  // Shown as the template shows it (ParamToString): for values made in code, such as tests'.
  explicit ParamCell(ParamValue v) : value(v), text(ParamToString(v)) {}

  // An integer or a finite float as a number; none for text, booleans and no value.
  std::optional<double> Number() const;
};

// The safe alphabet of template values (README: Templates): ASCII letters, digits and
// . _ + - , : / = @. A value drawn from it is data wherever a template puts it: as an argument, in
// a here-document, a printf format, or a string in a bash, Python or Perl program, because no
// shell and no common interpreter gives these characters meaning (no quotes, blanks, line
// breaks, $ ` \ ; & | < > ( ) [ ] { } * ? ~ # % ! or bytes beyond ASCII). This is the invariant
// by default; a value outside it must be declared by the study (`text = true`) and then stands
// only where the shell treats it as data (slurm/shell_context.h: a variable's value, a comment).
bool IsSafeValue(std::string_view v);
// The first character of `v` outside the safe alphabet, for a message ("' ' (a blank)", "'$'",
// "byte 0x0a (a line break)"); "" when `v` is safe.
std::string FirstUnsafeChar(std::string_view v);
inline constexpr std::string_view kSafeValueAlphabet = "letters, digits and . _ + - , : / = @";

// The alphabet keeps a value from being code; its shape keeps it from being an option or a path
// that leaves its place (README: Templates). By default a value may begin with '-' only if it is a
// number (ParamToString's forms: -3, -0.5, -1e-05), since a program reads any other leading '-' as
// an option; and it may neither begin with '/' nor hold a '..' component, since in a path
// (`{{trial_dir}}/{{x}}.txt`) either would leave the directory it is put in. A part after '=' counts
// as a path of its own (`of=../x`, `--out=/x`: programs read paths there too). A study lifts these by
// declaring the parameter (`option = true`, `path = true`), and the template must then show where
// the value may stand (slurm/sbatch_script.h).
bool IsNumberText(std::string_view v);
// Begins with '-' and is not a number.
bool ReadsAsOption(std::string_view v);
// Begins with '/' (or a part after '=' does), or has a '..' component between '/' and '='.
bool LeavesItsPlace(std::string_view v);
// Why the value's shape is refused ("begins with '-' and is not a number, so a program would read it
// as an option"), or "" when it is not; `option` / `path`: the study declared it so.
std::string ValueShapeProblem(std::string_view v, bool option, bool path);

// Name and value, in the study's parameter order.
using Params = std::vector<std::pair<std::string, ParamValue>>;

struct TrialSpec {
  std::string key;             // "t-" + 12 hex digits of a hash of the values
  Params params;               // in the study's parameter order
  std::string params_json;     // ParamsText(params) (base/params_text.h): the store's column
  std::string dropped_reason;  // non-empty: a constraint failed
};

}  // namespace sweep
