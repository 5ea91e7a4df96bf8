// Expanding a study's search space into trials; see space.h.
#include "study/space.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "base/params_text.h"
#include "study/expr.h"
#include "study/repeats.h"
#include "study/trial_key.h"

namespace sweep::study {
namespace {

ExprValue ToExpr(const ParamValue& v) {
  if (auto i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (auto d = std::get_if<double>(&v)) return *d;
  if (auto b = std::get_if<bool>(&v)) return *b;
  return std::get<std::string>(v);
}

// Uniform in [0, 1) from the generator's raw bits: std::uniform_real_distribution is not
// the same on every standard library, and trial keys must not change with the compiler.
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

ParamValue Draw(const ParamSpec& p, std::mt19937_64& rng) {
  if (!p.choices.empty()) {
    size_t i = static_cast<size_t>(Uniform(rng) * static_cast<double>(p.choices.size()));
    return p.choices[std::min(i, p.choices.size() - 1)];
  }
  double lo = *p.min, hi = *p.max, u = Uniform(rng);
  double x = p.log ? std::exp(std::log(lo) + u * (std::log(hi) - std::log(lo))) : lo + u * (hi - lo);
  if (p.integer) return static_cast<int64_t>(std::llround(x));
  // Six significant digits: readable in reports, and the key stays stable when printed.
  return std::stod(fmt::format("{:.6g}", x));
}

}  // namespace

Result<std::vector<TrialSpec>> ExpandSpace(const Study& study) { return ExpandSpace(study, {Params{}}); }

Result<std::vector<TrialSpec>> ExpandSpace(const Study& study, const std::vector<Params>& seeds) {
  std::vector<Params> configs;
  // The tpe sampler proposes trials as results come in (sampler/tpe.h): none are known up front.
  if (study.sampler == "tpe") return std::vector<TrialSpec>{};
  if (study.sampler == "grid") {
    configs = seeds;
    for (const auto& p : study.space) {
      std::vector<Params> next;
      for (const auto& base : configs) {
        for (const auto& v : p.choices) {
          Params c = base;
          c.emplace_back(p.name, v);
          next.push_back(std::move(c));
        }
      }
      configs = std::move(next);
    }
  } else {
    std::mt19937_64 rng(study.seed);
    std::set<std::string> seen;
    for (int draws = 0; static_cast<int>(configs.size()) < study.trials && draws < study.trials * 50; ++draws) {
      Params c;
      for (const auto& p : study.space) c.emplace_back(p.name, Draw(p, rng));
      if (seen.insert(TrialKey(c)).second) configs.push_back(std::move(c));
    }
  }
  // [[search.enqueue]] first, then the sampler's own (those not enqueued); a random budget counts both.
  if (!study.enqueue.empty()) {
    std::set<std::string> first;
    for (const Params& c : study.enqueue) first.insert(TrialKey(c));
    std::vector<Params> ordered = study.enqueue;
    for (auto& c : configs) {
      if (!first.count(TrialKey(c))) ordered.push_back(std::move(c));
    }
    if (study.sampler == "random" && static_cast<int>(ordered.size()) > study.trials) ordered.resize(study.trials);
    configs = std::move(ordered);
  }

  auto checker = ConstraintChecker::Make(study);
  if (!checker.ok()) return checker.status();
  std::vector<TrialSpec> out;
  out.reserve(configs.size());
  for (auto& c : configs) {
    auto spec = checker->Check(std::move(c));
    if (!spec.ok()) return spec.status();
    // Each configuration is `repeats` trials (repeats.h); one that a constraint drops, one row.
    int64_t repeats = spec->dropped_reason.empty() ? study.repeats : 1;
    for (auto& t : RepeatTrials(study, *spec, 0, repeats)) out.push_back(std::move(t));
  }
  return out;
}

Result<ConstraintChecker> ConstraintChecker::Make(const Study& study) {
  ConstraintChecker checker;
  checker.path_ = study.path;
  for (const auto& c : study.constraints) {
    auto e = Expr::Parse(c.expr);
    if (!e.ok()) return e.status().WithContext(fmt::format("{}:{}: constraint '{}'", study.path, c.line, c.expr));
    checker.constraints_.emplace_back(c, *e);
  }
  checker.builtins_ = {
      {"nodes", static_cast<double>(study.job.nodes)},
      {"gpus_per_node", static_cast<double>(study.job.gpus_per_node)},
      {"gpus", static_cast<double>(study.job.nodes * study.job.gpus_per_node)},
  };
  return checker;
}

Result<TrialSpec> ConstraintChecker::Check(Params c) const {
  TrialSpec t;
  t.key = TrialKey(c);
  t.params_json = ParamsText(c);
  std::map<std::string, ExprValue> vars = builtins_;
  for (const auto& [name, v] : c) vars[name] = ToExpr(v);
  for (const auto& [spec, expr] : constraints_) {
    auto ok = expr.EvalBool(vars);
    if (!ok.ok()) {
      return ok.status().WithContext(fmt::format("{}:{}: key 'search.constraints': constraint '{}' for {}", path_,
                                                 spec.line, spec.expr, t.params_json));
    }
    if (!*ok) {
      t.dropped_reason = fmt::format("constraint '{}' is false", spec.expr);
      break;
    }
  }
  t.params = std::move(c);
  return t;
}

}  // namespace sweep::study
