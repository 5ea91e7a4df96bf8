// `run --repeat-top K --repeats N`: more seeds for the best configurations so far, as new trials of
// the study (configurations.h ranks them).
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "store/store.h"
#include "study/space.h"
#include "study/study.h"

namespace sweep::run {

// Each configuration of the study (ConfigIdentity -> its TrialSpec without a seed): a grid's or
// random study's from its expansion, a tpe study's from its stored trials.
Result<std::map<std::string, TrialSpec>> StudyConfigurations(const study::Study& study,
                                                             const std::vector<store::TrialRecord>& stored);

// `run --repeat-top K --repeats N`: the K best configurations so far (by mean over seeds) get the
// seeds of 0 .. N-1 they do not have yet, as new trials of the study; the trials that ran stay.
// Running it again adds nothing (unless the ranking changed). Returns the trials added.
// FailedPrecondition for a study whose template has no seed.
Result<std::vector<store::TrialRecord>> AddTopRepeats(store::Store& store, const study::Study& study, int64_t study_id,
                                                      int top, int repeats, double now);

// `run --repeat-top K [--repeats N]` before the run starts: AddTopRepeats with N (default twice
// [search] repeats, at least 2), and what it added as a line for the user. InvalidArgument for
// --repeats without --repeat-top; FailedPrecondition before the study has run.
Result<std::string> RepeatTop(store::Store& store, const study::Study& study, int top, int repeats, double now);

}  // namespace sweep::run
