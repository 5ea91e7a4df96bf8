// The tpe sampler's view of a study; see tpe_trials.h.
#include "orchestrator/tpe_trials.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "base/trial_state.h"

namespace sweep {

std::vector<sampler::Dimension> SamplerSpace(const Study& study) {
  std::vector<sampler::Dimension> dims;
  for (const ParamSpec& p : study.space) {
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

Params ParamsOf(const Study& study, const sampler::Point& x) {
  Params params;
  for (size_t j = 0; j < study.space.size(); ++j) {
    const ParamSpec& p = study.space[j];
    if (!p.choices.empty()) params.emplace_back(p.name, p.choices[static_cast<size_t>(x[j])]);
    else if (p.integer) params.emplace_back(p.name, static_cast<int64_t>(std::llround(x[j])));
    else params.emplace_back(p.name, x[j]);
  }
  return params;
}

namespace {

std::optional<double> Coordinate(const ParamSpec& p, const nlohmann::json& v) {
  if (!p.choices.empty()) {
    for (size_t i = 0; i < p.choices.size(); ++i) {
      bool same = std::visit(
          [&](const auto& c) -> bool {
            using T = std::decay_t<decltype(c)>;
            if constexpr (std::is_same_v<T, std::string>) return v.is_string() && v.get<std::string>() == c;
            else if constexpr (std::is_same_v<T, bool>) return v.is_boolean() && v.get<bool>() == c;
            else return v.is_number() && v.get<double>() == static_cast<double>(c);
          },
          p.choices[i]);
      if (same) return static_cast<double>(i);
    }
    return std::nullopt;
  }
  if (!v.is_number()) return std::nullopt;
  double x = v.get<double>();
  if (x < *p.min || x > *p.max) return std::nullopt;
  return x;
}

}  // namespace

std::optional<sampler::Point> PointOf(const Study& study, const std::string& params_json) {
  nlohmann::json j = nlohmann::json::parse(params_json, nullptr, false);
  if (!j.is_object()) return std::nullopt;
  sampler::Point x;
  for (const ParamSpec& p : study.space) {
    if (!j.contains(p.name)) return std::nullopt;
    auto c = Coordinate(p, j[p.name]);
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
  for (std::string_view bad : std::initializer_list<std::string_view>{
           "failed", "timeout", "out_of_memory", kTrialCudaOom, kTrialDiverged, kTrialSkipped, kTrialDropped}) {
    if (state == bad) return sampler::Outcome::kInfeasible;
  }
  if (!IsFinalTrialState(state)) return sampler::Outcome::kPending;
  return sampler::Outcome::kIgnored;  // cancelled, lost, node failure, preempted: says nothing
}

Result<std::optional<sampler::Observation>> ObserveTrial(store::Store& store, const Study& study,
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

Result<std::vector<sampler::Observation>> WarmStartObservations(const Study& study) {
  std::vector<sampler::Observation> out;
  if (!study.warm_start) return out;
  std::string where = fmt::format("{}:{}: search.seed_from", study.path, study.warm_start->line);
  auto other = LoadStudy(study.warm_start->study_path);
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

}  // namespace sweep
