// A study's trials: the space expanded over phase 2's seeds, and the store's trials the study file
// still expands to; see study_trials.h.
#include "results/study_trials.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>

#include "study/loader.h"
#include "study/repeats.h"

namespace sweep::results {

std::vector<std::string> ParamNames(const study::Study& study) {
  std::vector<std::string> names;
  // Phase 2 of a two-phase study: phase 1's winners come first in every trial (SeedConfigs).
  if (study.seeds) {
    names = study.seeds->param_names;
  } else if (study.seed_from) {
    auto phase1 = study::LoadStudy(study.seed_from->study_path);
    if (phase1.ok()) {
      for (const auto& p : phase1->space) names.push_back(p.name);
    }
  }
  for (const auto& p : study.space) names.push_back(p.name);
  if (study::Seeded(study)) names.push_back(study.seed_var);  // the last of a repeat's params (study/repeats.h)
  return names;
}

Result<std::vector<store::TrialRecord>> StudyTrials(store::Store& store, const study::Study& study, int64_t study_id,
                                                    int* left_out) {
  auto trials = store.ListTrials(study_id);
  if (!trials.ok()) return trials.status();
  if (left_out) *left_out = 0;
  // Trials are keyed by their [space] values: one whose values left the study file is history,
  // not a candidate. Kept all when the file cannot be expanded (a phase 2 whose phase 1 cannot be
  // read) or matches none of them (not the file that made them).
  std::shared_ptr<const std::vector<TrialSpec>> specs = study.expanded;
  if (!specs) {
    auto expanded = ExpandStudy(study);
    if (!expanded.ok()) return trials;
    specs = std::make_shared<const std::vector<TrialSpec>>(std::move(*expanded));
  }
  std::set<std::string> keys;
  for (const auto& spec : *specs) keys.insert(spec.key);
  for (const auto& spec : StoredRepeats(study, *specs, *trials)) keys.insert(spec.key);  // run --repeat-top's
  if (std::none_of(trials->begin(), trials->end(),
                   [&](const store::TrialRecord& t) { return keys.count(t.trial_key); })) {
    return trials;
  }
  auto gone = std::remove_if(trials->begin(), trials->end(),
                             [&](const store::TrialRecord& t) { return !keys.count(t.trial_key); });
  if (left_out) *left_out = static_cast<int>(trials->end() - gone);
  trials->erase(gone, trials->end());
  return trials;
}

Result<std::vector<Params>> SeedConfigs(const study::Study& study) {
  if (!study.seed_from) return std::vector<Params>{Params{}};
  if (!study.seeds) {
    return Status::FailedPrecondition(fmt::format(
        "{}:{}: search.seed_from: phase 1's ranking was not read (ResolveSeeds, phase_seeds.h, comes first)",
        study.path, study.seed_from->line));
  }
  if (!study.seeds->status.ok()) return study.seeds->status;
  return study.seeds->configs;
}

Result<std::vector<TrialSpec>> ExpandStudy(const study::Study& study) {
  if (study.expanded) return *study.expanded;
  auto seeds = SeedConfigs(study);
  if (!seeds.ok()) return seeds.status();
  return study::ExpandSpace(study, *seeds);
}

std::vector<TrialSpec> StoredRepeats(const study::Study& study, const std::vector<TrialSpec>& expanded,
                                     const std::vector<store::TrialRecord>& stored) {
  std::vector<TrialSpec> out;
  if (!study::Seeded(study)) return out;
  std::set<std::string> listed;
  std::map<std::string, const TrialSpec*> seed0;  // configuration -> its first repeat
  for (const TrialSpec& spec : expanded) {
    listed.insert(spec.key);
    if (spec.dropped_reason.empty() && study::SeedOf(study, spec.params_json) == 0) {
      seed0.emplace(study::ConfigIdentity(study, spec.params_json), &spec);
    }
  }
  for (const auto& t : stored) {
    if (listed.count(t.trial_key)) continue;
    auto config = seed0.find(study::ConfigIdentity(study, t.params_json));
    if (config == seed0.end()) continue;
    TrialSpec base = *config->second;
    base.params.pop_back();  // the seed (repeats.h)
    base.params_json = config->first;
    auto spec = study::RepeatTrials(study, base, study::SeedOf(study, t.params_json), 1).front();
    // Only what maps back to its key: a trial of an earlier study file stays history.
    if (spec.key == t.trial_key) out.push_back(std::move(spec));
  }
  return out;
}

}  // namespace sweep::results
