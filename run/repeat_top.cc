// More seeds for the best configurations; see repeat_top.h.
#include "run/repeat_top.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "results/configurations.h"
#include "results/report_data.h"
#include "results/study_trials.h"
#include "run/tpe_trials.h"
#include "study/repeats.h"

namespace sweep::run {

Result<std::map<std::string, TrialSpec>> StudyConfigurations(const study::Study& study,
                                                             const std::vector<store::TrialRecord>& stored) {
  std::map<std::string, TrialSpec> out;
  auto as_config = [&](TrialSpec spec) {
    // A repeat's spec back to its configuration's: the seed is its last parameter (repeats.h).
    if (study::Seeded(study) && !spec.params.empty() && spec.params.back().first == study.seed_var) {
      spec.params.pop_back();
      spec.key = study::TrialKey(spec.params);
      spec.params_json = study::ConfigIdentity(study, spec.params_json);
    }
    std::string id = study::ConfigIdentity(study, spec.params_json);
    out.emplace(std::move(id), std::move(spec));
  };
  if (study.sampler != "tpe") {
    auto specs = results::ExpandStudy(study);
    if (!specs.ok()) return specs.status();
    for (auto& spec : *specs) as_config(std::move(spec));
    return out;
  }
  auto mine = StoredTpeTrials(study, stored);
  if (!mine.ok()) return mine.status();
  for (auto& spec : *mine) as_config(std::move(spec));
  return out;
}

Result<std::vector<store::TrialRecord>> AddTopRepeats(store::Store& store, const study::Study& study, int64_t study_id,
                                                      int top, int repeats, double now) {
  if (!study::Seeded(study)) {
    return Status::FailedPrecondition(fmt::format(
        "{}: --repeat-top needs trials that differ in a seed: set [search] seed_var = \"seed\" (or repeats = N) and "
        "pass {{{{seed}}}} to the program in the template",
        study.path));
  }
  auto stored = store.ListTrials(study_id);
  if (!stored.ok()) return stored.status();
  auto configs = StudyConfigurations(study, *stored);
  if (!configs.ok()) return configs.status();
  auto rows = results::CollectTrialRows(store, study, study_id, now, study.objective.metric);
  if (!rows.ok()) return rows.status();
  std::map<int64_t, const store::TrialRecord*> by_id;
  for (const auto& t : *stored) by_id[t.id] = &t;
  reports::ConfigRanking ranking = *results::RankStudyConfigurations(study, *rows);
  std::vector<store::TrialRecord> added;
  int taken = 0;
  for (const reports::ConfigGroup& g : ranking.groups) {
    if (!g.mean || taken >= top) break;
    ++taken;
    const store::TrialRecord* first = by_id.at((*rows)[g.rows.front()].trial_id);
    auto config = configs->find(study::ConfigIdentity(study, first->params_json));
    if (config == configs->end()) continue;
    std::set<std::string> have(g.seeds.begin(), g.seeds.end());
    for (int64_t seed = 0; seed < repeats; ++seed) {
      if (have.count(std::to_string(seed))) continue;
      TrialSpec spec = study::RepeatTrials(study, config->second, seed, 1).front();
      added.push_back(store::TrialRecord::FromSpec(spec));
    }
  }
  SWEEP_RETURN_IF_ERROR(store.InsertTrialsIfAbsent(study_id, added));
  return added;
}

Result<std::string> RepeatTop(store::Store& store, const study::Study& study, int top, int repeats, double now) {
  if (top <= 0) return Status::InvalidArgument("--repeats N goes with --repeat-top K (the configurations to repeat)");
  if (repeats <= 0) repeats = std::max(2, 2 * study.repeats);
  auto record = store.GetStudy(study.name);
  if (!record.ok()) {
    return Status::FailedPrecondition(
        fmt::format("--repeat-top: study '{}' has not run yet; run it first, then repeat its best", study.name));
  }
  auto added = AddTopRepeats(store, study, record->id, top, repeats, now);
  if (!added.ok()) return added.status();
  if (added->empty()) {
    return fmt::format("--repeat-top {}: the {} best configuration(s) have {} seeds already (or none has completed)\n",
                       top, top, repeats);
  }
  std::set<std::string> configs;
  for (const auto& t : *added) configs.insert(study::ConfigIdentity(study, t.params_json));
  return fmt::format("--repeat-top {}: {} new trial(s), seeds up to {} of {} configuration(s)\n", top, added->size(),
                     repeats - 1, configs.size());
}

}  // namespace sweep::run
