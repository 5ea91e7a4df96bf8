// The loader's part of [search] repeats, seed_var and enqueue (repeats.h), apart so that users of
// repeats.h do not parse toml++'s headers.
// Module study/: the study file; uses base/ only.
#pragma once

#include <string>

#include <toml++/toml.h>

#include "base/status.h"
#include "study/study.h"

namespace sweep {

// Reads `repeats`, `seed_var` and `enqueue` of the [search] table `search` into `s`, whose
// [space], constraints and [job.vars] are loaded already. Errors name file, line and key.
Status LoadRepeatsAndEnqueue(const toml::table& search, const std::string& path, Study& s);

}  // namespace sweep
