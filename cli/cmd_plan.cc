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
#include <set>
#include <variant>

#include "base/params_text.h"
#include "base/text.h"
#include "base/trial_state.h"
#include "cli/status_view.h"
#include "cli/commands.h"
#include "results/phases.h"
#include "run/study_files.h"
#include "results/report_data.h"
#include "results/report_files.h"
#include "results/study_trials.h"
#include "run/outside_space.h"
#include "run/tpe_trials.h"
#include "run/trial_script.h"
#include "study/repeats.h"
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

// Up to this many rows `plan` lists every trial; above it, the counts per verdict and the first
// kFirstRows rows (issue 42: a 10,000-trial study's plan is read, not scrolled). `--all` and
// `--json` list every one.
constexpr size_t kAllRowsUpTo = 200;
constexpr size_t kFirstRows = 20;

bool ListEveryRow(const PlanFlags& flags, size_t rows) { return flags.all || rows <= kAllRowsUpTo; }

std::string MoreRows(size_t shown, size_t rows) {
  return fmt::format("... {} more of {} rows (`plan --all` lists every one, `plan --json` too)\n", rows - shown, rows);
}

// What `run` submits: `trials` trials, one job each (an array's task or a job of its own), and for a
// seeded study the configurations and seeds they are.
std::string JobsLine(const study::Study& study, const std::vector<const TrialSpec*>& to_run) {
  if (!study::Seeded(study)) return fmt::format("jobs: {} to submit, one per trial\n", to_run.size());
  std::set<std::string> configs;
  for (const TrialSpec* t : to_run) configs.insert(study::ConfigIdentity(study, t->params_json));
  return fmt::format("jobs: {} to submit, one per trial: {} configurations x their seeds ({})\n", to_run.size(),
                     configs.size(), run::SeedsText(study));
}

// Which planned or stored trials [report] baseline names, as the report will find it
// (results/report_data.cc: a trial key, or a table of values every such trial holds).
struct BaselineMatch {
  std::vector<std::string> keys;
  bool enqueued = false;  // a tpe study's: one of [[search.enqueue]], proposed first
};
BaselineMatch FindBaseline(const study::Study& study, const std::vector<const TrialSpec*>& planned,
                           const std::vector<store::TrialRecord>& stored) {
  BaselineMatch m;
  const std::string& want = study.report.baseline;
  auto holds = [&](const store::TrialRecord& r) {
    return IsParamsText(want) ? r.HoldsValues(want) : r.trial_key == want;
  };
  std::set<std::string> seen;
  auto add = [&](const store::TrialRecord& r) {
    if (holds(r) && seen.insert(r.trial_key).second) m.keys.push_back(r.trial_key);
  };
  for (const TrialSpec* t : planned) add(store::TrialRecord::FromSpec(*t));
  for (const auto& r : stored) add(r);
  for (const Params& config : study.enqueue) {
    store::TrialRecord r;
    r.params_json = ParamsText(config);
    if (IsParamsText(want) && r.HoldsValues(want)) m.enqueued = true;
  }
  return m;
}

std::string BaselineLine(const study::Study& study, const std::vector<const TrialSpec*>& planned,
                         const std::vector<store::TrialRecord>& stored) {
  if (study.report.baseline.empty()) {
    return "baseline: none named ([report] baseline = a trial key or a table of values): the report shows no "
           "speedup\n";
  }
  BaselineMatch m = FindBaseline(study, planned, stored);
  std::string named = TerminalSafe(study.report.baseline);
  if (!m.keys.empty()) {
    std::string keys;
    for (size_t i = 0; i < m.keys.size() && i < 5; ++i) keys += fmt::format("{}{}", i ? ", " : "", m.keys[i]);
    if (m.keys.size() > 5) keys += fmt::format(", ... ({} trials)", m.keys.size());
    return fmt::format("baseline: {} = trial(s) {}{}\n", named, keys,
                       m.keys.size() > 1 ? " (the report compares it as one configuration)" : "");
  }
  if (m.enqueued) return fmt::format("baseline: {} = an enqueued configuration, proposed first\n", named);
  return fmt::format("baseline: {} matches no trial{}: the report will show no speedup\n", named,
                     study.sampler == "tpe" ? " (add it to [[search.enqueue]] so that it runs)" : "");
}

nlohmann::json BaselineJson(const study::Study& study, const std::vector<const TrialSpec*>& planned,
                            const std::vector<store::TrialRecord>& stored) {
  if (study.report.baseline.empty()) return nullptr;
  BaselineMatch m = FindBaseline(study, planned, stored);
  return {{"named", study.report.baseline}, {"trials", m.keys}, {"enqueued", m.enqueued}};
}

// The trials an earlier version of the file left outside its space (run/outside_space.h), as a
// line; "" when there is none or the file cannot tell.
std::string OutsideLine(App& app, const std::vector<store::TrialRecord>& stored) {
  auto outside = run::TrialsOutsideSpace(app.study, stored);
  if (!outside.ok()) return "";
  return run::DescribeOutsideSpace(app.study, *outside, app.study_path);
}

nlohmann::json OutsideJson(App& app, const std::vector<store::TrialRecord>& stored) {
  nlohmann::json out = nlohmann::json::array();
  auto outside = run::TrialsOutsideSpace(app.study, stored);
  if (!outside.ok()) return out;
  for (const auto& t : *outside) out.push_back({{"key", t.trial_key}, {"state", t.state}, {"job_id", t.job_id}});
  return out;
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

// The grid's or random study's trials with their verdicts, as text: every row up to kAllRowsUpTo (or
// with --all), else the first kFirstRows; then the counts. `to_run` gets what a run would submit.
Status PrintTrialPlan(App& app, const PlanFlags& flags, const std::vector<TrialSpec>& specs,
                      const std::vector<store::TrialRecord>& stored, std::vector<const TrialSpec*>& to_run) {
  std::map<std::string, std::string> states;
  for (const auto& t : stored) states[t.trial_key] = t.state;
  // Without a model there is no memory to predict: the dry run is the trials, and which the
  // constraints drop (a constraint that cannot be evaluated fails here, not at `run`).
  if (!app.study.job.vars.count("model")) {
    bool every = ListEveryRow(flags, specs.size());
    int dropped = 0;
    std::map<std::string, int> already;
    size_t shown = 0;
    for (const TrialSpec& t : specs) {
      auto it = states.find(t.key);
      // A study that already ran: what each trial is now, so "to run" means what a run would submit.
      std::string label = !t.dropped_reason.empty()                       ? "dropped"
                          : it == states.end() || it->second == kTrialNew ? "run"
                                                                          : it->second;
      if (!t.dropped_reason.empty()) ++dropped;
      else if (label == "run") to_run.push_back(&t);
      else ++already[label];
      if (!every && shown >= kFirstRows) continue;
      ++shown;
      std::string params;
      for (const auto& [name, value] : t.params) {
        params += fmt::format("{}{}={}", params.empty() ? "" : " ", name, TerminalSafe(ParamToString(value)));
      }
      std::cout << fmt::format("{:<16} {:<9} {}{}\n", t.key, label, params,
                               t.dropped_reason.empty() ? "" : "  [" + TerminalSafe(t.dropped_reason) + "]");
    }
    if (shown < specs.size()) std::cout << MoreRows(shown, specs.size());
    std::string done;
    for (const auto& [state, n] : already) done += fmt::format("{}{} {}", done.empty() ? "" : ", ", n, state);
    std::cout << fmt::format(
        "{} trials: {} to run, {}{} dropped by constraints; nothing was submitted (no [job.vars] "
        "model, so no memory plan)\n",
        specs.size(), to_run.size(), done.empty() ? "" : "already in the database: " + done + "; ", dropped);
    return Status::OK();
  }
  auto plan = results::PlanStudy(app.study);
  if (!plan.ok()) return plan.status();
  for (const planner::PlanRow& r : plan->rows) {
    if (r.verdict != planner::PlanRow::Verdict::kFits) continue;
    auto it = states.find(r.trial.key);
    if (it != states.end() && it->second != kTrialNew) continue;
    for (const TrialSpec& t : specs) {
      if (t.key == r.trial.key) to_run.push_back(&t);
    }
  }
  if (ListEveryRow(flags, plan->rows.size())) {
    std::cout << planner::RenderPlan(*plan, results::ParamNames(app.study));
    return Status::OK();
  }
  // The first rows as RenderPlan draws them, then the counts of every row.
  planner::Plan first = *plan;
  first.rows.erase(first.rows.begin() + kFirstRows, first.rows.end());
  std::string text = planner::RenderPlan(first, results::ParamNames(app.study));
  text.erase(text.rfind('\n', text.size() - 2) + 1);  // its summary counts only the first rows
  std::cout << text << MoreRows(kFirstRows, plan->rows.size()) << planner::PlanSummary(*plan) << "\n";
  return Status::OK();
}

// The trials `plan --script` knows: a grid's or random study's every trial (with the seeds --repeat-top
// added), a tpe study's first proposals with their seeds and those it proposed so far (stored).
Result<std::vector<TrialSpec>> ScriptableTrials(App& app, const std::vector<store::TrialRecord>& stored) {
  const study::Study& study = app.study;
  if (study.sampler != "tpe") {
    auto specs = results::ExpandStudy(study);
    if (!specs.ok()) return specs.status();
    for (auto& spec : results::StoredRepeats(study, *specs, stored)) specs->push_back(std::move(spec));
    return specs;
  }
  auto first = run::FirstTpeProposals(study);
  if (!first.ok()) return first.status();
  std::vector<TrialSpec> specs;
  for (const TrialSpec& config : *first) {
    for (auto& spec : study::RepeatTrials(study, config, 0, study.repeats)) specs.push_back(std::move(spec));
  }
  auto mine = run::StoredTpeTrials(study, stored);
  if (!mine.ok()) return mine.status();
  for (auto& spec : *mine) {
    bool listed = std::any_of(specs.begin(), specs.end(), [&](const TrialSpec& l) { return l.key == spec.key; });
    if (!listed) specs.push_back(std::move(spec));
  }
  return specs;
}

// The trial's script for its next attempt, rendered as `run` submits a trial that goes alone (not
// as a job array's task): the same functions (trial_script.h), the same files.
Result<std::string> RenderScript(const study::Study& study, const TrialSpec& spec,
                                 const std::vector<store::TrialRecord>& stored) {
  store::TrialRecord trial;
  trial.trial_key = spec.key;
  trial.params_json = spec.params_json;
  for (const auto& t : stored) {
    if (t.trial_key == spec.key) trial = t;
  }
  run::StudyFiles files = run::FilesOf(study.cluster.workdir, study.name, stored);
  trial.attempt += 1;
  trial.log_path = files.TrialLog(trial.trial_key, trial.attempt);
  auto body = run::RenderTrialBody(study, spec, trial, files.TrialDir(trial.trial_key));
  if (!body.ok()) return body.status().WithContext(fmt::format("trial {}: `run` would refuse it", spec.key));
  auto script = run::AddTrialHeader(study, trial, *body);
  if (!script.ok()) return script.status().WithContext(fmt::format("trial {}: `run` would refuse it", spec.key));
  return script;
}

// The plan's last part, whatever the sampler: the baseline, the trials outside the space, and the
// script of the first trial a run submits (`plan --script` prints any other's).
void PrintPlanFooter(App& app, const std::vector<const TrialSpec*>& planned,
                     const std::vector<store::TrialRecord>& stored, const TrialSpec* first) {
  std::cout << BaselineLine(app.study, planned, stored);
  std::cout << OutsideLine(app, stored);
  if (!first) return;
  auto script = RenderScript(app.study, *first, stored);
  if (!script.ok()) return;  // listed as refused above
  std::cout << fmt::format("the script of trial {} as `run` submits it (`plan --script TRIAL` prints another's):\n{}",
                           first->key, *script);
  if (!script->ends_with('\n')) std::cout << "\n";
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
  std::vector<TrialSpec> first;
  for (const TrialSpec& config : region->first) {
    for (auto& spec : study::RepeatTrials(app.study, config, 0, app.study.repeats)) first.push_back(std::move(spec));
  }
  std::vector<const TrialSpec*> planned;
  for (const TrialSpec& t : first) planned.push_back(&t);
  if (flags.json) {
    auto doc = PlanJson(app, {}, refused);
    if (!doc.ok()) return doc.status();
    (*doc)["sampler"] = "tpe";
    (*doc)["region"] = run::TpeRegionJson(app.study, *region);
    (*doc)["trials"] = trials;
    (*doc)["counts"] = counts;
    (*doc)["jobs"] = run::TpeBudgetTrials(app.study);
    (*doc)["configurations"] = app.study.trials;
    (*doc)["seeds"] = study::Seeded(app.study) ? app.study.repeats : 0;
    (*doc)["baseline"] = BaselineJson(app.study, planned, *stored);
    (*doc)["outside_space"] = OutsideJson(app, *stored);
    std::cout << DumpJson(*doc);
    return refusal();
  }
  std::cout << run::RenderTpeRegion(app.study, *region);
  PrintDeclaredPaths(app.study);
  for (const auto& [value, why] : refused) std::cout << fmt::format("refused  {}: {}\n", value, TerminalSafe(why));
  std::string so_far;
  for (const auto& [state, n] : counts) so_far += fmt::format("{}{} {}", so_far.empty() ? "" : ", ", n, state);
  if (!so_far.empty()) std::cout << fmt::format("already proposed ({} in the database): {}\n", trials.size(), so_far);
  PrintPlanFooter(app, planned, *stored, first.empty() ? nullptr : &first.front());
  return refusal();
}

// `plan --script TRIAL`: the trial's script for its next attempt (RenderScript).
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
  auto script = RenderScript(study, spec, *stored);
  if (!script.ok()) return script.status();
  std::cout << *script;
  return Status::OK();
}

}  // namespace

void AddPlanFlags(CLI::App* sub, App& app, PlanFlags& flags) {
  AddStudyArgument(sub, app);
  sub->add_flag("--json", flags.json, "Print JSON (schema version 1, see README)");
  sub->add_flag("--all", flags.all,
                fmt::format("List every trial even above {} (without it, the counts and the first {})", kAllRowsUpTo,
                            kFirstRows));
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
  auto stored = RecordedTrials(app);
  if (!stored.ok()) return stored.status();
  std::vector<const TrialSpec*> to_run;
  if (flags.json) {
    auto doc = PlanJson(app, *specs, refused);
    if (!doc.ok()) return doc.status();
    std::vector<const TrialSpec*> planned;
    std::set<std::string> runs, configs;
    for (const auto& t : (*doc)["trials"]) {
      if (t["verdict"] == "run") runs.insert(t["key"].get<std::string>());
    }
    for (const TrialSpec& t : *specs) {
      planned.push_back(&t);
      if (runs.count(t.key)) configs.insert(study::ConfigIdentity(app.study, t.params_json));
    }
    size_t jobs = runs.size();
    (*doc)["jobs"] = jobs;
    (*doc)["configurations"] = configs.size();
    (*doc)["seeds"] = study::Seeded(app.study) ? app.study.repeats : 0;
    (*doc)["baseline"] = BaselineJson(app.study, planned, *stored);
    (*doc)["outside_space"] = OutsideJson(app, *stored);
    std::cout << DumpJson(*doc);
  } else {
    SWEEP_RETURN_IF_ERROR(PrintTrialPlan(app, flags, *specs, *stored, to_run));
    PrintDeclaredPaths(app.study);
    for (const auto& [key, why] : refused) std::cout << fmt::format("refused  {}: {}\n", key, TerminalSafe(why));
    std::erase_if(to_run, [&](const TrialSpec* t) { return refused.count(t->key) > 0; });
    std::cout << JobsLine(app.study, to_run);
    std::vector<const TrialSpec*> planned;
    for (const TrialSpec& t : *specs) planned.push_back(&t);
    PrintPlanFooter(app, planned, *stored, to_run.empty() ? nullptr : to_run.front());
  }
  if (!refused.empty()) {
    return Status::InvalidArgument(
        fmt::format("{} trial(s) cannot be rendered; `run` would submit nothing", refused.size()));
  }
  return Status::OK();
}

}  // namespace sweep::cli
