// The tpe sampler's view of a study: its [space] as the sampler's dimensions, a stored trial as
// an observation (point, outcome, objective), and another study's trials as a warm start.
// Module orchestrator/: the application; may use every module.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "sampler/tpe.h"
#include "store/store.h"
#include "study/space.h"
#include "study/study.h"

namespace sweep {

std::vector<sampler::Dimension> SamplerSpace(const Study& study);
// The parameter values of a proposal, typed as the study file's [space] gives them.
Params ParamsOf(const Study& study, const sampler::Point& x);
// A stored trial's values as a point of the study's space; nullopt when they are not one (a
// parameter missing, a choice the file no longer lists, a value outside the range).
std::optional<sampler::Point> PointOf(const Study& study, const std::string& params_json);
// What a trial in `state` tells the sampler (sampler::Outcome); completed and pruned trials need
// their objective's last value too.
sampler::Outcome OutcomeOf(const std::string& state);
// The observation a stored trial makes: the objective's last value (negated for mode = "max").
Result<std::optional<sampler::Observation>> ObserveTrial(store::Store& store, const Study& study,
                                                         const store::TrialRecord& trial);
// A tpe study's warm start ([search] seed_from): every ended trial of the other study whose values
// are a point of this study's space, as observations of source 1. Errors name the seed_from line.
Result<std::vector<sampler::Observation>> WarmStartObservations(const Study& study);

}  // namespace sweep
