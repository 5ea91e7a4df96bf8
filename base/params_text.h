// A trial's parameter values as one text, and back: the codec of the store's column
// trials.params_json (store/store.h), in one place.
//
// The text is a JSON object, keys sorted, each value as the study file typed it: {"lr":1.0,
// "mbs":8,"opt":"adam","warm":true}. It is more than a column: two trials are the same
// configuration when their texts without the seed are equal (study/repeats.h), and the study makes
// that text before any database exists (`plan`, the configurations of a study file). So the codec
// lives in base/, which every module may use, rather than in the store, which the study may not:
// the study writes the text once from its typed values (TrialSpec::params_json), the store keeps
// it, and the store's TrialRecord reads it back typed (Values, Cells, HoldsValues). The
// orchestrator only passes the values on, and reports/ get ParamCells: a parameter's walk from the
// study file to the report crosses each module once. No module but this one reads values out of
// the text (`status --json` and `plan --json` embed it whole in their own JSON).
//
// A float keeps the form JSON gives it ("1.0", "1e-05"), which is what the store holds and what
// trials.csv shows; a float that is not finite is stored as null (JSON has no NaN) and reads back
// as no value. Texts written by every earlier version read back the same: the format has not
// changed since the first schema.
// Module base/: the standard library; nlohmann-json in the .cc only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/params.h"

namespace sweep {

// The text of `params` (keys sorted, whatever their order in `params`).
std::string ParamsText(const Params& params);

// Whether `text` is a parameter text (a JSON object), as [report] baseline's table of values is
// and a trial key is not.
bool IsParamsText(std::string_view text);

// The values of `names` in that order, typed (integer, float, string or boolean); a name the text
// has no value for is left out. A text that is no JSON object has none.
Params ParamsFromText(std::string_view text, const std::vector<std::string>& names);

// The same values as the reports carry them (ParamCell), each with the text the store keeps
// ("1.0" for a float 1, not the template's "1"); an empty cell for a name without a value.
std::vector<ParamCell> ParamCellsFromText(std::string_view text, const std::vector<std::string>& names);

// Whether `text` holds each value of `wanted` (a parameter text: [report] baseline given as a
// table): equal as numbers or values, or shown as the same text (a number may be given as text).
// False when `wanted` is no parameter text.
bool ParamsTextHolds(std::string_view text, std::string_view wanted);

// One value of `text` set to an integer (a repeat's seed, study/repeats.h); a text that is no
// JSON object becomes an object of that value alone.
std::string ParamsTextWith(std::string_view text, const std::string& name, int64_t value);
// `text` without the value of `name` (a configuration's identity: its text without the seed); a
// text that is no JSON object is returned as it is.
std::string ParamsTextWithout(std::string_view text, const std::string& name);
// The integer value of `name` in `text`; none when it has none or another type.
std::optional<int64_t> IntegerInParamsText(std::string_view text, const std::string& name);

}  // namespace sweep
