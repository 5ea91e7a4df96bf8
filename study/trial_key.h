// The key of a trial: "t-" + 12 hex digits of a hash of its parameter values, independent of
// their order. The space (space.h) keys each configuration, repeats (repeats.h) each seed's
// trial; apart from both so that neither includes the other.
// Module study/: the study file; uses base/ only.
#pragma once

#include <string>

#include "base/params.h"

namespace sweep::study {

// The key of a set of parameter values; order-independent.
std::string TrialKey(const Params& params);

}  // namespace sweep::study
