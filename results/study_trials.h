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
// (ResolveSeeds, phase_seeds.h: phase 1's ranking is its report's, report_data.h). A report lists only the
// trials the study file (phase 2: over phase 1's seeds) still expands to (StudyTrials, here).
// Layer results/ (namespace sweep::results): stored trials into views; uses the store, study, planner, reports.
#pragma once

#include <string>
#include <vector>

#include "base/params.h"
#include "base/status.h"
#include "store/store.h"
#include "study/space.h"
#include "study/study.h"

namespace sweep::results {

// The seeds of `study`: phase 1's top configurations, best first, as ResolveSeeds (phase_seeds.h)
// read them, or one empty seed when the study has no seed_from. kFailedPrecondition when phase 1
// has not run to the end, or its ranking was not read yet.
Result<std::vector<Params>> SeedConfigs(const study::Study& study);

// ExpandSpace over SeedConfigs: every caller that turns a study file into trials uses this.
Result<std::vector<TrialSpec>> ExpandStudy(const study::Study& study);

// The study's parameters in each trial's order: phase 1's (phase 2 of a two-phase study), then
// its own [space]'s.
std::vector<std::string> ParamNames(const study::Study& study);

// The study's trials in the store, in trial id order, without those whose [space] values are no
// longer in the study file (counted in *left_out): they are history, not candidates.
Result<std::vector<store::TrialRecord>> StudyTrials(store::Store& store, const study::Study& study, int64_t study_id,
                                                    int* left_out = nullptr);

// The stored trials that a seeded study's expansion (`expanded`) does not list but that are
// repeats of one of its configurations with another seed (added by `run --repeat-top`): their
// specs, so a later `run` tracks, resumes and reports them as the study's own.
std::vector<TrialSpec> StoredRepeats(const study::Study& study, const std::vector<TrialSpec>& expanded,
                                     const std::vector<store::TrialRecord>& stored);

}  // namespace sweep::results
