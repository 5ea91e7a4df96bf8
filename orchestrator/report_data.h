// Turning what the store holds into the plain rows reports/ renders (trials.csv, status).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "orchestrator/study.h"
#include "reports/csv.h"
#include "store/store.h"

namespace sweep {

// One row per trial of the study, in trial id order. `now` fills the wall time of running trials.
Result<std::vector<reports::TrialRow>> CollectTrialRows(store::Store& store, int64_t study_id,
                                                        const std::vector<std::string>& param_names, double now);

std::vector<std::string> ParamNames(const Study& study);

}  // namespace sweep
