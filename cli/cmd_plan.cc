// `slurmsweep plan`: the dry run. Offline: needs neither the cluster nor the database (it reads the
// database if there is one, to say what already ran). Lists the trials and which constraints drop,
// predicts memory with a [job.vars] model, and for a tpe study shows the region it proposes from.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <variant>

#include "base/text.h"
#include "base/trial_state.h"
#include "cli/status_view.h"
#include "cli/commands.h"
#include "results/phases.h"
#include "run/study_files.h"
#include "results/report_data.h"
#include "results/report_files.h"
#include "results/study_trials.h"
#include "run/tpe_trials.h"
#include "run/trial_script.h"
#include "planner/planner.h"

namespace sweep::cli {
namespace {

// The trials the study's database records (a study that ran), read only: none when there is no
// database, it cannot be opened or it does not know the study; an error only when listing fails.
Result<std::vector<store::TrialRecord>> RecordedTrials(App& app) {
  std::vector<store::TrialRecord> none;
  if (!std::filesystem::exists(app.study.database) || !app.OpenStore(true).ok()) return none;
  auto rec = app.store->GetStudy(app.study.name);
  if (!rec.ok()) return none;
  return app.store->ListTrials(rec->id);
}

// What each trial is in the study's database already (a study that ran), by trial key.
std::map<std::string, std::string> StoredStates(App& app) {
  std::map<std::string, std::string> stored;
  if (auto trials = RecordedTrials(app); trials.ok()) {
    for (const auto& t : *trials) stored[t.trial_key] = t.state;
  }
  return stored;
}

// The values of the declared paths (`path = true` in [space] or [job.vars]) as the template gets
// them: normalised at load (a/./b/../c -> a/c), so the study's author sees what the trials use.
std::map<std::string, std::vector<std::string>> DeclaredPaths(const study::Study& study) {
  std::map<std::string, std::vector<std::string>> out;
  for (const std::string& name : study.job.path_vars) out[name].push_back(study.job.vars.at(name));
  for (const study::ParamSpec& p : study.space) {
    if (!p.path) continue;
    for (const ParamValue& v : p.choices) out[p.name].push_back(ParamToString(v));
  }
  return out;
}

void PrintDeclaredPaths(const study::Study& study) {
  for (const auto& [name, values] : DeclaredPaths(study)) {
    std::vector<std::string> shown;
    for (const auto& v : values) shown.push_back(TerminalSafe(v));
    std::cout << fmt::format("path     {} = {} (declared path = true; normalised)\n", name, fmt::join(shown, ", "));
  }
}

// `plan --json` (README: JSON output): every trial with its verdict ("run", "dropped" by a
// constraint, "rule" or "oom" from the memory plan, or the state a trial that already ran is
// in), its values and predicted memory, and the trials run would refuse to render.
Result<nlohmann::json> PlanJson(App& app, const std::vector<TrialSpec>& specs,
                                const std::map<std::string, std::string>& refused) {
  std::map<std::string, std::string> stored = StoredStates(app);
  nlohmann::json trials = nlohmann::json::array();
  std::map<std::string, int> counts;
  auto add = [&](const TrialSpec& t, std::string verdict, std::string reason, std::optional<double> gib) {
    auto it = stored.find(t.key);
    if (verdict == "run" && it != stored.end() && it->second != kTrialNew) verdict = it->second;
    // A trial its template cannot carry would not run: `run` refuses the study before submitting.
    if (auto why = refused.find(t.key); verdict == "run" && why != refused.end()) {
      verdict = "refused";
      reason = why->second;
    }
    ++counts[verdict];
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [name, value] : t.params) {
      std::visit([&, &key = name](const auto& v) { params[key] = v; }, value);
    }
    trials.push_back({{"key", t.key},
                      {"verdict", verdict},
                      {"reason", reason},
                      {"params", params},
                      {"predicted_gib", gib ? nlohmann::json(*gib) : nlohmann::json()}});
  };
  nlohmann::json memory_plan;
  std::optional<planner::Plan> plan;
  if (app.study.job.vars.count("model")) {
    auto planned = results::PlanStudy(app.study);
    if (!planned.ok()) return planned.status();
    plan = std::move(*planned);
    memory_plan = {{"model", plan->model.name},
                   {"world", plan->world},
                   {"gpu_mem_gib", plan->gpu_mem_gib},
                   {"headroom_gib", plan->headroom_gib}};
  }
  for (const results::PlanVerdict& v : results::PlanVerdicts(specs, plan ? &*plan : nullptr)) {
    add(*v.trial, v.verdict, v.reason, v.predicted_gib);
  }
  nlohmann::json refusals = nlohmann::json::array();
  for (const auto& [key, why] : refused) refusals.push_back({{"key", key}, {"reason", why}});
  return nlohmann::json{{"version", kStatusJsonVersion},
                        {"kind", "plan"},
                        {"study", {{"name", app.study.name}, {"file", app.study.path}}},
                        {"memory_plan", memory_plan},
                        {"counts", counts},
                        {"trials", trials},
                        {"refused", refusals},
                        {"declared_paths", DeclaredPaths(app.study)}};
}

Status PrintTrialPlan(App& app) {
  // Without a model there is no memory to predict: the dry run is the trials, and which the
  // constraints drop (a constraint that cannot be evaluated fails here, not at `run`).
  if (!app.study.job.vars.count("model")) {
    auto specs = results::ExpandStudy(app.study);
    if (!specs.ok()) return specs.status();
    // A study that already ran: what each trial is now, so "to run" means what a run would submit.
    std::map<std::string, std::string> stored = StoredStates(app);
    int dropped = 0, to_run = 0;
    std::map<std::string, int> already;
    for (const TrialSpec& t : *specs) {
      std::string params;
      for (const auto& [name, value] : t.params) {
        params += fmt::format("{}{}={}", params.empty() ? "" : " ", name, TerminalSafe(ParamToString(value)));
      }
      auto it = stored.find(t.key);
      std::string label = !t.dropped_reason.empty()                       ? "dropped"
                          : it == stored.end() || it->second == kTrialNew ? "run"
                                                                          : it->second;
      if (!t.dropped_reason.empty()) ++dropped;
      else if (label == "run") ++to_run;
      else ++already[label];
      std::cout << fmt::format("{:<16} {:<9} {}{}\n", t.key, label, params,
                               t.dropped_reason.empty() ? "" : "  [" + TerminalSafe(t.dropped_reason) + "]");
    }
    std::string done;
    for (const auto& [state, n] : already) done += fmt::format("{}{} {}", done.empty() ? "" : ", ", n, state);
    std::cout << fmt::format(
        "{} trials: {} to run, {}{} dropped by constraints; nothing was submitted (no [job.vars] "
        "model, so no memory plan)\n",
        specs->size(), to_run, done.empty() ? "" : "already in the database: " + done + "; ", dropped);
    return Status::OK();
  }
  auto plan = results::PlanStudy(app.study);
  if (!plan.ok()) return plan.status();
  std::cout << planner::RenderPlan(*plan, results::ParamNames(app.study));
  return Status::OK();
}

// A tpe study has no trials before it runs: the region its proposals come from (tpe_trials.h),
// and the trials it proposed so far.
Status PlanTpe(App& app, const PlanFlags& flags) {
  auto region = run::PlanTpeRegion(app.study);
  if (!region.ok()) return region.status();
  // Values of its lists that the template cannot carry: `run` would refuse the study (Prepare).
  auto refused = run::ValueRefusals(app.study);
  auto refusal = [&]() -> Status {
    if (refused.empty()) return Status::OK();
    return Status::InvalidArgument(
        fmt::format("{} value(s) cannot be rendered; `run` would submit nothing", refused.size()));
  };
  // The trials proposed so far (a study that ran), as `plan --json` lists a grid's.
  nlohmann::json trials = nlohmann::json::array();
  std::map<std::string, int> counts;
  auto stored = RecordedTrials(app);
  if (!stored.ok()) return stored.status();
  for (const auto& t : *stored) {
    ++counts[t.state];
    trials.push_back({{"key", t.trial_key},
                      {"verdict", t.state},
                      {"reason", t.reason},
                      {"params", nlohmann::json::parse(t.params_json, nullptr, false)},
                      {"predicted_gib", nullptr}});
  }
  if (flags.json) {
    auto doc = PlanJson(app, {}, refused);
    if (!doc.ok()) return doc.status();
    (*doc)["sampler"] = "tpe";
    (*doc)["region"] = run::TpeRegionJson(app.study, *region);
    (*doc)["trials"] = trials;
    (*doc)["counts"] = counts;
    std::cout << DumpJson(*doc);
    return refusal();
  }
  std::cout << run::RenderTpeRegion(app.study, *region);
  PrintDeclaredPaths(app.study);
  for (const auto& [value, why] : refused) std::cout << fmt::format("refused  {}: {}\n", value, TerminalSafe(why));
  std::string so_far;
  for (const auto& [state, n] : counts) so_far += fmt::format("{}{} {}", so_far.empty() ? "" : ", ", n, state);
  if (!so_far.empty()) std::cout << fmt::format("already proposed ({} in the database): {}\n", trials.size(), so_far);
  return refusal();
}

// The trials `plan --script` knows: a grid's or random study's every trial, a tpe study's first
// proposals and those it proposed so far (stored).
Result<std::vector<TrialSpec>> ScriptableTrials(App& app, const std::vector<store::TrialRecord>& stored) {
  const study::Study& study = app.study;
  if (study.sampler != "tpe") return results::ExpandStudy(study);
  auto specs = run::FirstTpeProposals(study);
  if (!specs.ok()) return specs.status();
  auto mine = run::StoredTpeTrials(study, stored);
  if (!mine.ok()) return mine.status();
  for (auto& spec : *mine) {
    bool listed = std::any_of(specs->begin(), specs->end(), [&](const TrialSpec& l) { return l.key == spec.key; });
    if (!listed) specs->push_back(std::move(spec));
  }
  return specs;
}

// `plan --script TRIAL`: the trial's script for its next attempt, rendered as `run` submits a trial
// that goes alone (not as a job array's task): the same functions (trial_script.h), the same files.
Status PrintTrialScript(App& app, const std::string& name) {
  const study::Study& study = app.study;
  auto stored = RecordedTrials(app);
  if (!stored.ok()) return stored.status();
  auto specs = ScriptableTrials(app, *stored);
  if (!specs.ok()) return specs.status();
  std::vector<const TrialSpec*> matches;
  std::vector<std::string_view> keys;
  for (const TrialSpec& t : *specs) {
    keys.push_back(t.key);
    if (t.key == name) {
      matches = {&t};
      break;
    }
    if (t.key.starts_with(name)) matches.push_back(&t);
  }
  if (matches.empty()) {
    return Status::NotFound(fmt::format("{}: no trial '{}'{} (`slurmsweep plan {}` lists them{})", study.path,
                                        TerminalSafe(name), DidYouMeanTrial(name, keys), app.study_path,
                                        study.sampler == "tpe" ? ": a tpe study's first proposals" : ""));
  }
  if (matches.size() > 1) {
    return Status::InvalidArgument(fmt::format("'{}' is the beginning of {} trial keys ({}, {}, ...): give more of it",
                                               TerminalSafe(name), matches.size(), matches[0]->key, matches[1]->key));
  }
  const TrialSpec& spec = *matches[0];
  if (!spec.dropped_reason.empty()) {
    return Status::InvalidArgument(fmt::format("trial {} is dropped ({}): `run` submits no script for it", spec.key,
                                               TerminalSafe(spec.dropped_reason)));
  }
  store::TrialRecord trial;
  trial.trial_key = spec.key;
  trial.params_json = spec.params_json;
  for (const auto& t : *stored) {
    if (t.trial_key == spec.key) trial = t;
  }
  run::StudyFiles files = run::FilesOf(study.cluster.workdir, study.name, *stored);
  trial.attempt += 1;
  trial.log_path = files.TrialLog(trial.trial_key, trial.attempt);
  auto body = run::RenderTrialBody(study, spec, trial, files.TrialDir(trial.trial_key));
  if (!body.ok()) return body.status().WithContext(fmt::format("trial {}: `run` would refuse it", spec.key));
  auto script = run::AddTrialHeader(study, trial, *body);
  if (!script.ok()) return script.status().WithContext(fmt::format("trial {}: `run` would refuse it", spec.key));
  std::cout << *script;
  return Status::OK();
}

}  // namespace

void AddPlanFlags(CLI::App* sub, App& app, PlanFlags& flags) {
  AddStudyArgument(sub, app);
  sub->add_flag("--json", flags.json, "Print JSON (schema version 1, see README)");
  sub->add_option("--script", flags.script_trial,
                  "Print trial TRIAL's sbatch script (its key or a unique beginning of it, as plan lists it) "
                  "exactly as run would submit it for its next attempt, and nothing else")
      ->type_name("TRIAL");
}

Status CmdPlan(App& app, PlanFlags& flags) {
  SWEEP_RETURN_IF_ERROR(app.LoadStudyFile());
  if (!flags.script_trial.empty()) return PrintTrialScript(app, flags.script_trial);
  if (app.study.sampler == "tpe") return PlanTpe(app, flags);
  // What `run` would refuse before submitting anything: trials whose values their template
  // cannot carry.
  auto specs = results::ExpandStudy(app.study);
  if (!specs.ok()) return specs.status();
  auto refused = run::RenderRefusals(app.study, *specs);
  if (flags.json) {
    auto doc = PlanJson(app, *specs, refused);
    if (!doc.ok()) return doc.status();
    std::cout << DumpJson(*doc);
  } else {
    SWEEP_RETURN_IF_ERROR(PrintTrialPlan(app));
    PrintDeclaredPaths(app.study);
    for (const auto& [key, why] : refused) std::cout << fmt::format("refused  {}: {}\n", key, TerminalSafe(why));
  }
  if (!refused.empty()) {
    return Status::InvalidArgument(
        fmt::format("{} trial(s) cannot be rendered; `run` would submit nothing", refused.size()));
  }
  return Status::OK();
}

}  // namespace sweep::cli
