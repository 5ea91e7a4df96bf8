// A study's trials: what its file expands to (ExpandStudy), the seeds phase 2 of a two-phase study
// takes from phase 1's ranking, its parameter names, and which of the store's trials the file
// still expands to (StudyTrials).
//
// Two-phase studies. Phase 1 screens the throughput knobs (micro-batch size, parallelism,
// recompute, precision) with short runs; phase 2 is a study of its own whose [search] seed_from
// names phase 1: its trials are phase 1's top configurations, each crossed with phase 2's
// [space] (the convergence knobs: optimizer, learning rate), raced with early stopping on loss
// versus time and ranked by time to target. Each phase is an ordinary study (its own database,
// report and resume); the link is read once, when the application resolves phase 2's seeds
// (ResolveSeeds). Phase 1's ranking is its report's (report_data.h), and a report lists only the
// trials the study file (phase 2: over phase 1's seeds) still expands to: the two files use each other.
// Module orchestrator/: the application; may use every module.
#pragma once

#include <string>
#include <vector>

#include "base/params.h"
#include "base/status.h"
#include "store/store.h"
#include "study/space.h"
#include "study/study.h"

namespace sweep::orchestrator {

// The seeds of `study`: phase 1's top configurations, best first, or one empty seed when the
// study has no seed_from. Phase 1 must have run to the end (kFailedPrecondition otherwise).
Result<std::vector<Params>> SeedConfigs(const study::Study& study);

// Reads phase 2's seeds (SeedConfigs) and phase 1's parameter names once, into study.seeds, so
// that SeedConfigs, ExpandStudy, ParamNames and the report's trial list no longer read phase 1's
// files. Why phase 1 cannot seed yet is kept there, not returned: commands that need the trials
// fail with it, the others (status, cancel) go on. Then expands the study once, into
// study.expanded (unset if it cannot be expanded), which ExpandStudy and StudyTrials take as data
// from then on: seeding and expansion happen once per command, not per report refresh. The
// application calls this after LoadStudy.
Status ResolveSeeds(study::Study& study);

// ExpandSpace over SeedConfigs: every caller that turns a study file into trials uses this.
Result<std::vector<TrialSpec>> ExpandStudy(const study::Study& study);

// The study's parameters in each trial's order: phase 1's (phase 2 of a two-phase study), then
// its own [space]'s.
std::vector<std::string> ParamNames(const study::Study& study);

// The study's trials in the store, in trial id order, without those whose [space] values are no
// longer in the study file (counted in *left_out): they are history, not candidates.
Result<std::vector<store::TrialRecord>> StudyTrials(store::Store& store, const study::Study& study, int64_t study_id,
                                                    int* left_out = nullptr);

}  // namespace sweep::orchestrator
