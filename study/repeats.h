// Repeats over seeds and known configurations first ([search] repeats, seed_var, enqueue).
//
// A configuration (one set of [space] values) of a study with `repeats = N` runs as N trials that
// differ only in a seed the template gets as {{seed}} (or the study's `seed_var`). The seeds are
// 0 .. N-1, so a rerun makes the same trials. The first repeat (seed 0) keeps the key the
// configuration has without repeats: raising `repeats` on a study that ran keeps its results and
// adds the other seeds; `run --repeat-top K --repeats N` brings the best K configurations to N
// seeds the same way (results/configurations.h). The seed is stored among the trial's
// parameters (the last one), so the store, the CSV and the template see it as any other value;
// what groups trials into a configuration is their parameters without it (ConfigIdentity).
//
// `[[search.enqueue]]` tables (Optuna's enqueue_trial) name configurations that run before the
// sampler's own: each gives a value for every [space] parameter, checked at load against the
// space and the constraints.
// Module study/: the study file; uses base/ only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/params.h"
#include "base/status.h"
#include "study/study.h"

namespace sweep::study {

// Whether the study's trials carry a seed: repeats > 1, or a `seed_var` given.
inline bool Seeded(const Study& s) { return !s.seed_var.empty(); }

// The trials of one configuration (`config`, as ExpandSpace checked it) for seeds first ..
// first + count - 1: its params with the seed appended; seed 0 keeps the configuration's key. A
// study that is not seeded: `config` itself.
std::vector<TrialSpec> RepeatTrials(const Study& study, const TrialSpec& config, int64_t first, int64_t count);

// A stored trial's configuration: its params_json without the seed (the same text for every
// repeat of it). Not JSON: `params_json` itself.
std::string ConfigIdentity(const Study& study, const std::string& params_json);
// A stored trial's seed: the seed variable's value in its params_json; 0 when it has none (a
// trial stored before the study had repeats is its configuration's seed 0).
int64_t SeedOf(const Study& study, const std::string& params_json);

}  // namespace sweep::study
