// The tpe sampler's view of a study; see tpe_trials.h.
#include "run/tpe_trials.h"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <cmath>
#include <map>
#include <set>
#include <string_view>
#include <utility>
#include <nlohmann/json.hpp>

#include "base/params_text.h"
#include "base/terminal.h"
#include "results/phases.h"
#include "base/trial_state.h"
#include "run/trial_script.h"
#include "study/expr.h"
#include "study/repeats.h"
#include "study/loader.h"

namespace sweep::run {

std::vector<sampler::Dimension> SamplerSpace(const study::Study& study) {
  std::vector<sampler::Dimension> dims;
  for (const study::ParamSpec& p : study.space) {
    sampler::Dimension d;
    d.name = p.name;
    if (!p.choices.empty()) {
      d.kind = sampler::Dimension::Kind::kCategorical;
      d.choices = static_cast<int>(p.choices.size());
    } else {
      d.kind = p.integer ? sampler::Dimension::Kind::kInt : sampler::Dimension::Kind::kFloat;
      d.lo = *p.min;
      d.hi = *p.max;
      d.log = p.log;
    }
    dims.push_back(std::move(d));
  }
  return dims;
}

Params ParamsOf(const study::Study& study, const sampler::Point& x) {
  Params params;
  for (size_t j = 0; j < study.space.size(); ++j) {
    const study::ParamSpec& p = study.space[j];
    if (!p.choices.empty()) params.emplace_back(p.name, p.choices[static_cast<size_t>(x[j])]);
    else if (p.integer) params.emplace_back(p.name, static_cast<int64_t>(std::llround(x[j])));
    else params.emplace_back(p.name, x[j]);
  }
  return params;
}

namespace {

std::optional<double> Coordinate(const study::ParamSpec& p, const ParamValue& v) {
  std::optional<double> number;
  if (const int64_t* i = std::get_if<int64_t>(&v)) number = static_cast<double>(*i);
  else if (const double* d = std::get_if<double>(&v)) number = *d;
  if (!p.choices.empty()) {
    for (size_t i = 0; i < p.choices.size(); ++i) {
      bool same = std::visit(
          [&](const auto& c) -> bool {
            using T = std::decay_t<decltype(c)>;
            if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool>) {
              return std::holds_alternative<T>(v) && std::get<T>(v) == c;
            } else {
              return number && *number == static_cast<double>(c);
            }
          },
          p.choices[i]);
      if (same) return static_cast<double>(i);
    }
    return std::nullopt;
  }
  if (!number) return std::nullopt;
  double x = *number;
  if (x < *p.min || x > *p.max) return std::nullopt;
  return x;
}

}  // namespace

std::optional<sampler::Point> PointOf(const study::Study& study, const std::string& params_json) {
  std::vector<std::string> names;
  for (const study::ParamSpec& p : study.space) names.push_back(p.name);
  Params values = ParamsFromText(params_json, names);  // in the order of the space
  if (values.size() != names.size() || !IsParamsText(params_json)) return std::nullopt;
  sampler::Point x;
  for (size_t i = 0; i < values.size(); ++i) {
    auto c = Coordinate(study.space[i], values[i].second);
    if (!c) return std::nullopt;
    x.push_back(*c);
  }
  return x;
}

sampler::Outcome OutcomeOf(const std::string& state) {
  if (state == "completed") return sampler::Outcome::kComplete;
  if (state == kTrialPruned) return sampler::Outcome::kPartial;
  // The settings are to blame: the same configuration would fail again (or, skipped, is proven
  // to need the memory of one that did).
  const TrialStateInfo* info = FindTrialState(state);
  if (info && info->settings_fault) return sampler::Outcome::kInfeasible;
  if (!info || !info->final) return sampler::Outcome::kPending;
  return sampler::Outcome::kIgnored;  // cancelled, lost, node failure, preempted: says nothing
}

Result<std::optional<sampler::Observation>> ObserveTrial(store::Store& store, const study::Study& study,
                                                         const store::TrialRecord& trial) {
  auto x = PointOf(study, trial.params_json);
  if (!x) return std::optional<sampler::Observation>();
  sampler::Observation o;
  o.x = std::move(*x);
  o.outcome = OutcomeOf(trial.state);
  if (o.outcome == sampler::Outcome::kComplete || o.outcome == sampler::Outcome::kPartial) {
    auto last = store.LastMetric(trial.id, study.objective.metric);
    if (!last.ok()) return last.status();
    if (!last->has_value() || !std::isfinite((*last)->value)) {
      // Completed without the objective, or pruned before it was logged: nothing to rank by.
      o.outcome = o.outcome == sampler::Outcome::kComplete ? sampler::Outcome::kInfeasible : sampler::Outcome::kIgnored;
    } else {
      o.value = study.objective.minimize ? (*last)->value : -(*last)->value;
    }
  }
  return std::optional<sampler::Observation>(std::move(o));
}

Result<std::vector<sampler::Observation>> WarmStartObservations(const study::Study& study) {
  std::vector<sampler::Observation> out;
  if (!study.warm_start) return out;
  std::string where = fmt::format("{}:{}: search.seed_from", study.path, study.warm_start->line);
  auto other = study::LoadStudy(study.warm_start->study_path);
  if (!other.ok()) return other.status().WithContext(where);
  if (other->objective.metric != study.objective.metric) {
    return Status::InvalidArgument(fmt::format("{}: study '{}' optimises {}, this one {}: its trials cannot inform",
                                               where, other->name, other->objective.metric, study.objective.metric));
  }
  auto db = store::Store::OpenReadOnly(other->database);
  if (!db.ok()) {
    return Status::FailedPrecondition(
        fmt::format("{}: study '{}' has no results to start from ({})", where, other->name, db.status().message()));
  }
  auto rec = (*db)->GetStudy(other->name);
  if (!rec.ok()) {
    return Status::FailedPrecondition(fmt::format("{}: study '{}' has not run", where, other->name));
  }
  auto trials = (*db)->ListTrials(rec->id);
  if (!trials.ok()) return trials.status();
  for (const auto& t : *trials) {
    if (!IsFinalTrialState(t.state)) continue;
    // Read with this study's objective direction and space: the same knobs, new hardware.
    auto o = ObserveTrial(**db, study, t);
    if (!o.ok()) return o.status();
    if (!*o || (*o)->outcome == sampler::Outcome::kIgnored) continue;
    (*o)->source = 1;
    out.push_back(std::move(**o));
  }
  if (out.empty()) {
    return Status::FailedPrecondition(fmt::format(
        "{}: no ended trial of study '{}' has values in this study's [space] to start from", where, other->name));
  }
  return out;
}

namespace {

// The region is planned up to this many combinations (plan --json lists each).
constexpr double kMaxListed = 10000;
// The text shows a list's first values and the most frequent reasons a combination may not be proposed.
constexpr size_t kValuesShown = 10;
constexpr size_t kReasonsShown = 6;

bool IsFloatRange(const study::ParamSpec& p) { return p.choices.empty() && !p.integer; }

// The combinations of a region that may not be proposed, by reason, most frequent first: each
// constraint, the parallelism rules and the memory plan (one group each, with an example: their
// reasons carry each combination's numbers).
struct RefusalGroup {
  std::string verdict;  // as plan --json's: "dropped", "rule" or "oom"
  std::string reason;
  std::string example;
  int n = 0;
};
std::vector<RefusalGroup> NotProposable(const TpeRegion& region) {
  std::map<std::string, RefusalGroup> groups;
  for (const results::PlanVerdict& v : results::PlanVerdicts(region.rows, region.plan ? &*region.plan : nullptr)) {
    std::string_view verdict = v.verdict;
    if (verdict == "run") continue;
    std::string reason = verdict == "oom"    ? std::string("predicted out of memory")
                         : verdict == "rule" ? std::string("break a parallelism rule")
                                             : v.reason;
    RefusalGroup& g = groups[reason];
    if (g.n++ > 0) continue;
    g.verdict = verdict;
    g.reason = reason;
    if (verdict != "dropped") g.example = v.reason;
  }
  std::vector<RefusalGroup> out;
  for (auto& [reason, g] : groups) out.push_back(std::move(g));
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.n > b.n; });
  return out;
}

}  // namespace

int TpeBudgetTrials(const study::Study& study) { return study.trials * std::max(1, study.repeats); }

std::string SeedsText(const study::Study& study) {
  if (!study::Seeded(study)) return "";
  std::string values = study.repeats <= 4 ? "" : fmt::format("0 to {}", study.repeats - 1);
  for (int i = 0; i < study.repeats && study.repeats <= 4; ++i) values += fmt::format("{}{}", i ? ", " : "", i);
  return fmt::format("{{{{{}}}}} = {}", study.seed_var, values);
}

sampler::Options TpeOptions(const study::Study& study) {
  sampler::Options options;
  options.seed = study.seed;
  options.startup = std::clamp(study.trials / 4, 2, 10);
  return options;
}

bool TpeAllows(const study::Study& study, const TrialSpec& spec, bool submit_predicted_oom, double headroom_bytes) {
  if (!spec.dropped_reason.empty()) return false;
  if (!study.job.vars.count("model")) return true;
  // The planner's verdict, as Prepare applies it to a grid: parallelism rules always, the memory
  // plan unless --submit-predicted-oom.
  auto plan = results::PlanTrials(study, {spec});
  if (!plan.ok() || plan->rows.size() != 1) return false;
  auto verdict = plan->rows.front().verdict;
  if (verdict == planner::PlanRow::Verdict::kRule || verdict == planner::PlanRow::Verdict::kConstraint) return false;
  if (verdict == planner::PlanRow::Verdict::kOom && !submit_predicted_oom) return false;
  constexpr double kGiB = 1024.0 * 1024 * 1024;
  if (plan->rows.front().memory && headroom_bytes > plan->headroom_gib * kGiB) {
    // The plan's headroom, grown by what finished trials measured (CalibrateMemory).
    double need = plan->rows.front().memory->Peak().Total() + headroom_bytes;
    if (need > plan->gpu_mem_gib * kGiB && !submit_predicted_oom) return false;
  }
  return true;
}

namespace {

// Up to `k` configurations, as checked specs: first the study's enqueued ones ([[search.enqueue]])
// not in `own` (ConfigIdentity of its trials) yet, then what the sampler proposes from `history`
// (which counts the enqueued as pending) among those the constraints and `allows` accept: what
// `run` proposes and what `plan` lists, one path for both.
Result<std::vector<TrialSpec>> ProposeSpecs(const study::Study& study, std::vector<sampler::Observation> history,
                                            const std::set<std::string>& own, int k,
                                            const std::function<bool(const TrialSpec&)>& allows) {
  auto checker = study::ConstraintChecker::Make(study);
  if (!checker.ok()) return checker.status();
  Status error;
  auto feasible = [&](const sampler::Point& x) {
    auto spec = checker->Check(ParamsOf(study, x));
    if (!spec.ok()) {
      if (error.ok()) error = spec.status();
      return false;
    }
    return allows(*spec);
  };
  auto points = PendingEnqueued(study, own, k);
  for (const auto& x : points) history.push_back({x, sampler::Outcome::kPending, 0, 0});
  auto proposed =
      sampler::Propose(SamplerSpace(study), history, k - static_cast<int>(points.size()), TpeOptions(study), feasible);
  SWEEP_RETURN_IF_ERROR(error);
  points.insert(points.end(), proposed.begin(), proposed.end());
  std::vector<TrialSpec> specs;
  for (const auto& x : points) {
    auto spec = checker->Check(ParamsOf(study, x));
    if (!spec.ok()) return spec.status();
    specs.push_back(std::move(*spec));
  }
  return specs;
}

}  // namespace

Result<std::vector<TrialSpec>> StoredTpeTrials(const study::Study& study,
                                               const std::vector<store::TrialRecord>& stored) {
  auto checker = study::ConstraintChecker::Make(study);
  if (!checker.ok()) return checker.status();
  std::vector<TrialSpec> out;
  for (const auto& t : stored) {
    auto x = PointOf(study, t.params_json);
    if (!x) continue;
    auto spec = checker->Check(ParamsOf(study, *x));
    if (!spec.ok()) return spec.status();
    if (study::Seeded(study)) *spec = study::RepeatTrials(study, *spec, study::SeedOf(study, t.params_json), 1).front();
    if (spec->key == t.trial_key) out.push_back(std::move(*spec));
  }
  return out;
}

Result<std::vector<TrialSpec>> FirstTpeProposals(const study::Study& study) {
  auto warm = WarmStartObservations(study);
  if (!warm.ok()) return warm.status();
  // The first tick proposes one batch of max_concurrent before any trial ends; without a warm
  // start the model takes over only after `startup` trials, however their results came in.
  int k = std::min(study.cluster.max_concurrent, study.trials);
  if (warm->empty()) k = std::max(k, std::min(TpeOptions(study).startup, study.trials));
  return ProposeSpecs(study, *warm, {}, k, [&](const TrialSpec& spec) { return TpeAllows(study, spec, false, 0); });
}

int TpeRegion::Proposable() const {
  if (plan) return plan->Count(planner::PlanRow::Verdict::kFits);
  return static_cast<int>(
      std::count_if(rows.begin(), rows.end(), [](const TrialSpec& t) { return t.dropped_reason.empty(); }));
}

Result<TpeRegion> PlanTpeRegion(const study::Study& study) {
  TpeRegion region;
  // The study as a grid of its lists and integer ranges, without the constraints that read a float.
  study::Study knobs = study;
  knobs.sampler = "grid";
  knobs.space.clear();
  knobs.constraints.clear();
  // Combinations of values, not trials: a configuration's seeds and the enqueued configurations
  // (which are combinations of the same lists) are not more of them.
  knobs.repeats = 1;
  knobs.seed_var.clear();
  knobs.enqueue.clear();
  std::set<std::string> floats;
  for (const study::ParamSpec& p : study.space) {
    if (IsFloatRange(p)) {
      region.floats.push_back(&p);
      floats.insert(p.name);
      continue;
    }
    double n = !p.choices.empty() ? static_cast<double>(p.choices.size()) : std::floor(*p.max) - std::ceil(*p.min) + 1;
    region.combinations *= n;
    knobs.space.push_back(p);
  }
  for (const study::Constraint& c : study.constraints) {
    auto e = study::Expr::Parse(c.expr);
    if (!e.ok()) return e.status().WithContext(fmt::format("{}:{}: constraint '{}'", study.path, c.line, c.expr));
    auto names = e->Variables();
    if (std::any_of(names.begin(), names.end(), [&](const std::string& n) { return floats.count(n) > 0; })) {
      region.per_proposal.push_back(&c);
    } else {
      knobs.constraints.push_back(c);
    }
  }
  auto first = FirstTpeProposals(study);
  if (!first.ok()) return first.status();
  region.first = std::move(*first);
  if (region.combinations > kMaxListed) return region;
  for (study::ParamSpec& p : knobs.space) {
    if (!p.choices.empty()) continue;
    for (double v = std::ceil(*p.min); v <= std::floor(*p.max); v += 1) p.choices.emplace_back(static_cast<int64_t>(v));
  }
  auto rows = study::ExpandSpace(knobs);
  if (!rows.ok()) return rows.status();
  for (size_t i = 0; i < rows->size(); ++i) (*rows)[i].key = fmt::format("#{}", i + 1);
  if (study.job.vars.count("model")) {
    auto plan = results::PlanTrials(knobs, *rows);
    if (!plan.ok()) return plan.status();
    region.plan = std::move(*plan);
  }
  region.rows = std::move(*rows);
  return region;
}

std::string RenderTpeRegion(const study::Study& study, const TpeRegion& region) {
  std::string out = "sampler = \"tpe\": trials are proposed as results come in, from this region:\n";
  size_t width = 0;
  for (const study::ParamSpec& p : study.space) width = std::max(width, p.name.size());
  for (const study::ParamSpec& p : study.space) {
    std::string what;
    if (!p.choices.empty()) {
      std::string values;
      for (size_t i = 0; i < p.choices.size() && i < kValuesShown; ++i) {
        values += fmt::format("{}{}", i ? ", " : "", TerminalSafe(ParamToString(p.choices[i])));
      }
      if (p.choices.size() > kValuesShown) values += fmt::format(", ... ({} values)", p.choices.size());
      what = (p.choices.size() == 1 ? "value " : "values ") + values;
    } else if (p.integer) {
      what = fmt::format("integers {:g} to {:g}{}", std::ceil(*p.min), std::floor(*p.max), p.log ? ", log scale" : "");
    } else {
      what =
          fmt::format("floats in [{:g}, {:g}]{}, drawn within each combination", *p.min, *p.max, p.log ? " (log)" : "");
    }
    out += fmt::format("  {:<{}}  {}\n", TerminalSafe(p.name), width, what);
  }
  std::string checks =
      study.job.vars.count("model") ? "constraints, parallelism rules and the memory plan" : "constraints";
  if (region.rows.empty()) {
    out += fmt::format(
        "its lists and integer ranges form {:.3g} combinations, too many to list here, so {} are checked on each "
        "proposal\n",
        region.combinations, checks);
  } else {
    int may = region.Proposable();
    int may_not = static_cast<int>(region.rows.size()) - may;
    out += fmt::format(
        "its lists and integer ranges form {} combinations: {} of them pass {} and may be proposed{}{}\n",
        region.rows.size(), may, checks, may == 0 ? " (none: `run` would end at once, proposing nothing)" : "",
        may_not > 0 ? fmt::format("; {} may not:", may_not) : "");
    std::vector<RefusalGroup> reasons = NotProposable(region);
    int rest = 0;
    for (size_t i = 0; i < reasons.size(); ++i) {
      const RefusalGroup& g = reasons[i];
      if (i >= kReasonsShown) {
        rest += g.n;
        continue;
      }
      out += fmt::format("  {:>6} {}{}\n", g.n, TerminalSafe(g.reason),
                         g.example.empty() ? "" : ", e.g. " + TerminalSafe(g.example));
    }
    if (rest > 0) {
      out += fmt::format("  {:>6} for {} other reasons (plan --json lists every combination)\n", rest,
                         reasons.size() - kReasonsShown);
    }
  }
  for (const study::Constraint* c : region.per_proposal) {
    out += fmt::format("checked on each proposal (names a float range): constraint '{}' ({}:{})\n",
                       TerminalSafe(c->expr), study.path, c->line);
  }
  if (region.plan) {
    out += fmt::format("memory plan: model {}, {} GPUs of {:g} GiB each\n", TerminalSafe(region.plan->model.name),
                       region.plan->world, region.plan->gpu_mem_gib);
  }
  bool seeded = study::Seeded(study);
  std::string seeds = SeedsText(study);
  if (!region.first.empty()) {
    out += fmt::format("the first {} {} `run` makes (seed {}){}, drawn before any result can change them:\n",
                       region.first.size(), seeded ? "configurations" : "proposals", study.seed,
                       seeded ? fmt::format(", each as {} trial(s), {}", study.repeats, seeds) : "");
    for (const TrialSpec& t : region.first) {
      std::string params;
      for (const auto& [name, value] : t.params) {
        params += fmt::format("{}{}={}", params.empty() ? "" : " ", name, TerminalSafe(ParamToString(value)));
      }
      std::string keys = t.key;
      if (seeded) {
        keys.clear();
        for (const TrialSpec& r : study::RepeatTrials(study, t, 0, study.repeats))
          keys += fmt::format("{}{}", keys.empty() ? "" : " ", r.key);
      }
      out += fmt::format("  {:<16} {}\n", keys, params);
    }
  }
  if (seeded) {
    out += fmt::format(
        "budget: {} configurations x {} seeds = {} trials, one job each (seed {}; {}); nothing was submitted\n",
        study.trials, study.repeats, TpeBudgetTrials(study), study.seed, seeds);
  } else {
    out += fmt::format("budget: {} trials (seed {}), one job each; nothing was submitted\n", study.trials, study.seed);
  }
  return out;
}

nlohmann::json TpeRegionJson(const study::Study& study, const TpeRegion& region) {
  nlohmann::json rows = nlohmann::json::array();
  auto add = [&](const TrialSpec& t, const char* verdict, const std::string& reason, std::optional<double> gib) {
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [name, value] : t.params) {
      std::visit([&](const auto& v) { params[name] = v; }, value);
    }
    rows.push_back({{"verdict", verdict},
                    {"reason", reason},
                    {"params", params},
                    {"predicted_gib", gib ? nlohmann::json(*gib) : nlohmann::json()}});
  };
  for (const results::PlanVerdict& v : results::PlanVerdicts(region.rows, region.plan ? &*region.plan : nullptr)) {
    add(*v.trial, v.verdict, v.reason, v.predicted_gib);
  }
  nlohmann::json floats = nlohmann::json::array();
  for (const study::ParamSpec* p : region.floats)
    floats.push_back({{"name", p->name}, {"min", *p->min}, {"max", *p->max}, {"log", p->log}});
  nlohmann::json per_proposal = nlohmann::json::array();
  for (const study::Constraint* c : region.per_proposal) per_proposal.push_back(c->expr);
  nlohmann::json combinations = region.combinations;
  if (region.combinations < 0x1p53) combinations = static_cast<int64_t>(region.combinations);
  // The summary plan's text shows: each parameter, the first proposals, and the combinations that may
  // not be proposed counted by verdict and reason.
  nlohmann::json parameters = nlohmann::json::array();
  for (const study::ParamSpec& p : study.space) {
    nlohmann::json param = {{"name", p.name}};
    if (!p.choices.empty()) {
      param["kind"] = "values";
      param["values"] = nlohmann::json::array();
      for (const ParamValue& v : p.choices) std::visit([&](const auto& x) { param["values"].push_back(x); }, v);
    } else {
      param["kind"] = p.integer ? "integers" : "floats";
      param["min"] = *p.min;
      param["max"] = *p.max;
      param["log"] = p.log;
    }
    parameters.push_back(std::move(param));
  }
  nlohmann::json first = nlohmann::json::array();
  for (const TrialSpec& t : region.first) {
    nlohmann::json params = nlohmann::json::object();
    for (const auto& [name, value] : t.params) {
      std::visit([&](const auto& v) { params[name] = v; }, value);
    }
    nlohmann::json trials = nlohmann::json::array();
    for (const TrialSpec& r : study::RepeatTrials(study, t, 0, study.repeats)) {
      trials.push_back(
          {{"key", r.key},
           {"seed", study::Seeded(study) ? nlohmann::json(study::SeedOf(study, r.params_json)) : nlohmann::json()}});
    }
    first.push_back({{"key", t.key}, {"params", params}, {"trials", trials}});
  }
  nlohmann::json not_proposable = nlohmann::json::array();
  for (const RefusalGroup& g : NotProposable(region)) {
    not_proposable.push_back({{"verdict", g.verdict}, {"reason", g.reason}, {"example", g.example}, {"count", g.n}});
  }
  return {{"combinations", combinations},
          {"listed", !region.rows.empty()},
          {"parameters", parameters},
          {"first_proposals", first},
          {"not_proposable", not_proposable},
          {"proposable", region.rows.empty() ? nlohmann::json() : nlohmann::json(region.Proposable())},
          {"configurations", rows},
          {"floats", floats},
          {"per_proposal_constraints", per_proposal}};
}

Status TpeProposer::Prepare() {
  const study::Study& study = ctx_.study;
  auto trials = ctx_.store.ListTrials(ctx_.study_id);
  if (!trials.ok()) return trials.status();
  auto mine = StoredTpeTrials(study, *trials);
  if (!mine.ok()) return mine.status();
  for (auto& spec : *mine) ctx_.specs[spec.key] = std::move(spec);
  std::vector<TrialSpec> own;
  for (const auto& [key, spec] : ctx_.specs) own.push_back(spec);
  SWEEP_RETURN_IF_ERROR(memory_.PlanProposed(own));
  // The headroom as the trials that ended so far calibrated it, so that a resumed run rules out
  // what an uninterrupted one would (their skip and calibrate events are in the store already).
  for (const auto& t : *trials) {
    if (!IsFinalTrialState(t.state) || !ctx_.specs.count(t.trial_key)) continue;
    auto excess = memory_.MeasuredExcess(t);
    if (!excess.ok()) return excess.status();
    if (*excess) memory_.RaiseHeadroom(**excess);
  }
  auto warm = WarmStartObservations(study);
  if (!warm.ok()) return warm.status();
  warm_ = std::move(*warm);
  if (!warm_.empty()) {
    ctx_.Event(std::nullopt, "warm_start",
               fmt::format("tpe starts from {} ended trial(s) of {}", warm_.size(), study.warm_start->study_path));
  }
  return Status::OK();
}

bool TpeProposer::Feasible(const TrialSpec& spec, const std::vector<const TrialSpec*>& ooms) {
  for (const TrialSpec* oom : ooms) {
    if (memory_.DominatedByOom(spec, *oom)) return false;
  }
  return TpeAllows(ctx_.study, spec, ctx_.submit_predicted_oom, memory_.headroom_bytes());
}

bool TpeProposer::MoreToPropose(const std::vector<store::TrialRecord>& trials) const {
  if (ctx_.study.sampler != "tpe" || exhausted_) return false;
  // The budget counts configurations: a study with repeats runs each as several trials.
  std::set<std::string> own;
  for (const auto& t : trials) {
    if (ctx_.specs.count(t.trial_key)) own.insert(study::ConfigIdentity(ctx_.study, t.params_json));
  }
  return static_cast<int>(own.size()) < ctx_.study.trials;
}

Status TpeProposer::Propose(std::vector<store::TrialRecord>& trials, int free_slots) {
  if (exhausted_) return Status::OK();
  const study::Study& study = ctx_.study;
  int waiting = 0;
  std::vector<sampler::Observation> history = warm_;
  std::vector<const TrialSpec*> ooms;
  // A configuration's repeats are one point with its noise (MergeRepeats); the budget counts configurations.
  std::vector<std::pair<std::string, sampler::Observation>> observed;
  std::set<std::string> own_configs;
  for (const auto& t : trials) {  // in id order: the order they were proposed
    auto spec = ctx_.specs.find(t.trial_key);
    if (spec == ctx_.specs.end()) continue;
    own_configs.insert(study::ConfigIdentity(study, t.params_json));
    if (t.state == kTrialNew) ++waiting;
    if (t.state == kTrialCudaOom) ooms.push_back(&spec->second);
    auto o = ObserveTrial(ctx_.store, study, t);
    if (!o.ok()) return o.status();
    if (*o) observed.emplace_back(study::ConfigIdentity(study, t.params_json), std::move(**o));
  }
  for (auto& o : MergeRepeats(observed)) history.push_back(std::move(o));
  int own = static_cast<int>(own_configs.size());
  int k = std::min(ConfigsForSlots(free_slots - waiting, study.repeats), study.trials - own);
  if (k <= 0) return Status::OK();
  auto configs =
      ProposeSpecs(study, history, own_configs, k, [&](const TrialSpec& spec) { return Feasible(spec, ooms); });
  if (!configs.ok()) return configs.status();
  std::vector<TrialSpec> specs;  // each configuration's repeats
  for (const TrialSpec& config : *configs) {
    for (auto& spec : study::RepeatTrials(study, config, 0, study.repeats)) specs.push_back(std::move(spec));
  }
  if (static_cast<int>(configs->size()) < k) {
    exhausted_ = true;
    ctx_.Event(std::nullopt, "exhausted",
               fmt::format("tpe: no configuration left that constraints and the plan allow and no trial has tried; "
                           "the study ends with {} of {} trials",
                           own + static_cast<int>(configs->size()), study.trials));
  }
  if (specs.empty()) return Status::OK();
  std::vector<store::TrialRecord> records;
  for (const TrialSpec& spec : specs) records.push_back(store::TrialRecord::FromSpec(spec));
  // Rendered before anything is stored, as a grid's trials are in Prepare.
  if (auto refused = RenderRefusals(study, specs); !refused.empty()) {
    return Status::InvalidArgument(fmt::format("tpe proposed trial {} that its template cannot carry: {}",
                                               refused.begin()->first, refused.begin()->second));
  }
  SWEEP_RETURN_IF_ERROR(ctx_.store.InsertTrialsIfAbsent(ctx_.study_id, records));
  SWEEP_RETURN_IF_ERROR(memory_.PlanProposed(specs));
  int ended = static_cast<int>(std::count_if(history.begin(), history.end(), [](const sampler::Observation& o) {
    return o.source == 0 && o.outcome != sampler::Outcome::kPending;
  }));
  for (size_t i = 0; i < records.size(); ++i) {
    ctx_.specs[specs[i].key] = specs[i];
    ctx_.Event(
        records[i].id, "propose",
        fmt::format("tpe proposed {} {} (from {} ended trial(s))", records[i].trial_key, specs[i].params_json, ended));
    trials.push_back(std::move(records[i]));
  }
  return Status::OK();
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

}  // namespace sweep::run
