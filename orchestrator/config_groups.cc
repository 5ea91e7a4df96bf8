// A study's trials grouped into configurations; see config_groups.h.
#include "orchestrator/config_groups.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "base/terminal.h"
#include "orchestrator/report_data.h"
#include "orchestrator/study_trials.h"
#include "orchestrator/tpe_trials.h"
#include "study/repeats.h"

namespace sweep::orchestrator {

std::optional<reports::ConfigRanking> RankStudyConfigurations(const study::Study& study,
                                                              const std::vector<reports::TrialRow>& rows) {
  if (!study::Seeded(study)) return std::nullopt;
  return reports::RankConfigurations(ParamNames(study), rows, study.seed_var, study.objective.minimize);
}

std::string RenderConfigurationsText(const reports::ConfigRanking& r) {
  std::string out = fmt::format("configurations by their mean over seeds ({}):\n", r.seed_name);
  int rank = 0;
  for (const reports::ConfigGroup& g : r.groups) {
    std::string params;
    for (size_t i = 0; i < r.param_names.size() && i < g.param_values.size(); ++i) {
      params += fmt::format("{}{}={}", i ? " " : "", r.param_names[i], TerminalSafe(g.param_values[i]));
    }
    std::string values;
    for (double v : g.values) values += fmt::format("{}{:.5g}", values.empty() ? "" : " ", v);
    out += fmt::format("  {:>3} {:>11} {:>10} {:>23} {:>3}/{:<3} {}{}\n", g.mean ? std::to_string(++rank) : "-",
                       g.mean ? fmt::format("{:.5g}", *g.mean) : "-", g.std ? fmt::format("± {:.2g}", *g.std) : "",
                       g.min ? fmt::format("[{:.5g}, {:.5g}]", *g.min, *g.max) : "", g.values.size(), g.rows.size(),
                       params, values.empty() ? "" : "  (" + values + ")");
  }
  if (std::string s = reports::SeparabilityText(r); !s.empty()) out += s + "\n";
  return out;
}

nlohmann::json ConfigurationsJson(const reports::ConfigRanking& r, const std::vector<reports::TrialRow>& rows,
                                  const std::vector<nlohmann::json>& typed) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  nlohmann::json ranking = nlohmann::json::array();
  int rank = 0;
  for (const reports::ConfigGroup& g : r.groups) {
    nlohmann::json params = g.rows.front() < typed.size() && typed[g.rows.front()].is_object()
                                ? typed[g.rows.front()]
                                : nlohmann::json::object();
    params.erase(r.seed_name);
    nlohmann::json seeds = nlohmann::json::array();
    for (const std::string& seed : g.seeds) seeds.push_back(std::strtoll(seed.c_str(), nullptr, 10));
    nlohmann::json trials = nlohmann::json::array();
    for (size_t i : g.rows) trials.push_back(rows[i].trial_key);
    ranking.push_back({{"rank", g.mean ? nlohmann::json(++rank) : nlohmann::json()},
                       {"params", params},
                       {"repeats", g.rows.size()},
                       {"completed", g.values.size()},
                       {"mean", opt(g.mean)},
                       {"std", opt(g.std)},
                       {"min", opt(g.min)},
                       {"max", opt(g.max)},
                       {"seeds", seeds},
                       {"trials", trials}});
  }
  return {{"seed_var", r.seed_name},
          {"best_two_separable", r.best_two_separable ? nlohmann::json(*r.best_two_separable) : nlohmann::json()},
          {"ranking", ranking}};
}

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
    auto specs = ExpandStudy(study);
    if (!specs.ok()) return specs.status();
    for (auto& spec : *specs) as_config(std::move(spec));
    return out;
  }
  auto mine = StoredTpeTrials(study, stored);
  if (!mine.ok()) return mine.status();
  for (auto& spec : *mine) as_config(std::move(spec));
  return out;
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
  auto rows = CollectTrialRows(store, study, study_id, now, study.objective.metric);
  if (!rows.ok()) return rows.status();
  std::map<int64_t, const store::TrialRecord*> by_id;
  for (const auto& t : *stored) by_id[t.id] = &t;
  reports::ConfigRanking ranking = *RankStudyConfigurations(study, *rows);
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

std::vector<sampler::Observation> MergeRepeats(
    const std::vector<std::pair<std::string, sampler::Observation>>& observations) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const sampler::Observation*>> by_config;
  for (const auto& [config, o] : observations) {
    auto& members = by_config[config];
    if (members.empty()) order.push_back(config);
    members.push_back(&o);
  }
  std::vector<sampler::Observation> out;
  for (const std::string& config : order) {
    const auto& members = by_config[config];
    sampler::Observation merged;
    merged.x = members.front()->x;
    merged.source = members.front()->source;
    double sum = 0;
    int valued = 0;
    bool pending = false, partial = false, infeasible = false;
    for (const sampler::Observation* o : members) {
      switch (o->outcome) {
        case sampler::Outcome::kPending:
          pending = true;
          break;
        case sampler::Outcome::kPartial:
          partial = true;
          [[fallthrough]];
        case sampler::Outcome::kComplete:
          sum += o->value, ++valued;
          break;
        case sampler::Outcome::kInfeasible:
          infeasible = true;
          break;
        case sampler::Outcome::kIgnored:
          break;
      }
    }
    if (pending) merged.outcome = sampler::Outcome::kPending;
    else if (valued > 0) {
      merged.outcome = partial ? sampler::Outcome::kPartial : sampler::Outcome::kComplete;
      merged.value = sum / valued;
    } else {
      merged.outcome = infeasible ? sampler::Outcome::kInfeasible : sampler::Outcome::kIgnored;
    }
    out.push_back(std::move(merged));
  }
  return out;
}

int ConfigsForSlots(int free, int repeats) {
  if (free <= 0) return 0;
  return std::max(1, free / std::max(1, repeats));
}

std::vector<sampler::Point> PendingEnqueued(const study::Study& study, const std::set<std::string>& own, int k) {
  std::vector<sampler::Point> out;
  auto checker = study::ConstraintChecker::Make(study);
  if (!checker.ok()) return out;  // the study's constraints parsed at load; nothing to add otherwise
  for (const Params& c : study.enqueue) {
    if (static_cast<int>(out.size()) >= k) break;
    auto spec = checker->Check(c);
    if (!spec.ok() || own.count(spec->params_json)) continue;
    if (auto x = PointOf(study, spec->params_json)) out.push_back(std::move(*x));
  }
  return out;
}

std::vector<stopping::StopDecision> EvaluateApartFromSiblings(stopping::StoppingState& state,
                                                              std::vector<stopping::TrialProgress> trials,
                                                              const std::vector<std::string>& config_of) {
  // The rules take rivals only from other configurations (stopping::TrialProgress::configuration):
  // one evaluation whatever the number of repeats.
  for (size_t i = 0; i < trials.size() && i < config_of.size(); ++i) trials[i].configuration = config_of[i];
  return state.Evaluate(trials);
}

}  // namespace sweep::orchestrator
