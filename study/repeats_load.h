// The loader's part of [search] repeats, seed_var and enqueue (repeats.h), apart so that users of
// repeats.h do not parse toml++'s headers, and so that repeats.h stays below space.h (the loader
// checks enqueued configurations with the space's constraints; the space expands into repeats).
// It names Study only by reference, so it declares it rather than include study.h, which
// study.cc's loader (its one caller) includes anyway.
// Module study/: the study file; uses base/ only.
#pragma once

#include <string>

#include <toml++/toml.h>

#include "base/status.h"

namespace sweep::study {

struct Study;  // study.h

// Reads `repeats`, `seed_var` and `enqueue` of the [search] table `search` into `s`, whose
// [space], constraints and [job.vars] are loaded already. Errors name file, line and key.
Status LoadRepeatsAndEnqueue(const toml::table& search, const std::string& path, Study& s);

}  // namespace sweep::study
