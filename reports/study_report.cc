// The report's analysis: outcome classes, smoothing, ranking, the speedup decomposition and
// costs; see study_report.h for the definitions.
#include "reports/study_report.h"

#include "base/median.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include <fmt/format.h>

namespace sweep::reports {
namespace {

// Order of the groups in the ranking: results first, then what may still produce one.
int GroupRank(Outcome o) {
  switch (o) {
    case Outcome::kCompleted:
      return 0;
    case Outcome::kRunning:
      return 1;
    case Outcome::kCancelled:
      return 2;
    case Outcome::kFailed:
      return 3;
    case Outcome::kQueued:
      return 4;
    case Outcome::kDropped:
      return 5;
  }
  return 6;
}

}  // namespace

Outcome OutcomeOf(const std::string& state) {
  // A state this version does not know counts as failed.
  const TrialStateInfo* s = FindTrialState(state);
  return s ? s->outcome : Outcome::kFailed;
}

std::string StateLabel(const std::string& state) {
  const TrialStateInfo* s = FindTrialState(state);
  return s && !s->label.empty() ? std::string(s->label) : state;
}

bool IsThroughputKnob(const std::string& param) {
  static const char* const kKnobs[] = {"tp",
                                       "pp",
                                       "cp",
                                       "ep",
                                       "vp",
                                       "dp",
                                       "mbs",
                                       "micro_batch_size",
                                       "micro_batch",
                                       "tensor_parallel",
                                       "tensor_model_parallel_size",
                                       "pipeline_parallel",
                                       "pipeline_model_parallel_size",
                                       "context_parallel_size",
                                       "virtual_pipeline",
                                       "precision",
                                       "recompute",
                                       "recompute_granularity",
                                       "dist_opt",
                                       "use_distributed_optimizer",
                                       "sequence_parallel",
                                       "overlap_grad_reduce",
                                       "overlap_param_gather",
                                       "fp8",
                                       "zero_stage",
                                       "activation_checkpointing",
                                       "num_workers"};
  for (const char* k : kKnobs) {
    if (param == k) return true;
  }
  return false;
}

std::optional<double> ResourceHours(const TrialSummary& trial, const StudyMeta& meta) {
  if (!trial.wall_s) return std::nullopt;
  double per_node = meta.gpus_per_node > 0 ? meta.gpus_per_node : std::max(1, meta.cpus_per_task);
  return std::max(0.0, *trial.wall_s) * std::max(1, meta.nodes) * per_node / 3600.0;
}

std::optional<double> TimeToTarget(const TrialSummary& trial) {
  if (!trial.steps_to_target || !Finite(trial.iters_per_s) || *trial.iters_per_s <= 0) return std::nullopt;
  return static_cast<double>(*trial.steps_to_target) / *trial.iters_per_s;
}

std::optional<Decomposition> Decompose(const TrialSummary& candidate, const TrialSummary& baseline) {
  if (!TimeToTarget(candidate) || !TimeToTarget(baseline)) return std::nullopt;
  // A target reached at step 0 makes the convergence ratio meaningless.
  if (*candidate.steps_to_target <= 0 || *baseline.steps_to_target <= 0) return std::nullopt;
  Decomposition d;
  d.throughput = *candidate.iters_per_s / *baseline.iters_per_s;
  d.convergence = static_cast<double>(*baseline.steps_to_target) / static_cast<double>(*candidate.steps_to_target);
  d.time_to_target = d.throughput * d.convergence;
  return d;
}

Analysis Analyze(const StudyReport& report) {
  Analysis a;
  const auto& trials = report.trials;
  const bool minimize = report.meta.minimize;
  a.gpu = report.meta.gpus_per_node > 0;

  a.ranking.resize(trials.size());
  for (size_t i = 0; i < trials.size(); ++i) a.ranking[i] = i;
  // Within a group: finite objective values best first, then the rest by trial id. Ranked by time
  // to target: those that reached it first, quickest first, then the others by final value.
  const bool by_time = report.meta.rank_by_time_to_target;
  auto key = [&](size_t i) {
    const TrialSummary& t = trials[i];
    bool has = Finite(t.final_value);
    double v = has ? (minimize ? *t.final_value : -*t.final_value) : 0;
    auto ttt = by_time ? TimeToTarget(t) : std::nullopt;
    int tier = ttt ? 0 : has ? 1 : 2;
    return std::make_tuple(GroupRank(OutcomeOf(t.state)), tier, ttt ? *ttt : v, t.id);
  };
  std::stable_sort(a.ranking.begin(), a.ranking.end(), [&](size_t x, size_t y) { return key(x) < key(y); });

  for (size_t i : a.ranking) {
    if (OutcomeOf(trials[i].state) == Outcome::kCompleted && Finite(trials[i].final_value)) {
      if (!a.recommended) {
        a.recommended = i;
      } else {
        a.runner_up = i;
        break;
      }
    }
  }
  for (size_t i = 0; i < trials.size(); ++i) {
    if (OutcomeOf(trials[i].state) != Outcome::kCompleted) continue;
    auto t = TimeToTarget(trials[i]);
    if (t && (!a.fastest || *t < *TimeToTarget(trials[*a.fastest]))) a.fastest = i;
  }
  if (a.recommended && report.baseline) a.decomposition = Decompose(trials[*a.recommended], trials[*report.baseline]);

  CostSummary& c = a.cost;
  std::map<std::string, CostSummary::FailureClass> failures;
  std::vector<double> queue;
  for (const TrialSummary& t : trials) {
    double h = ResourceHours(t, report.meta).value_or(0);
    c.resource_hours += h;
    Outcome o = OutcomeOf(t.state);
    switch (o) {
      case Outcome::kCompleted:
        c.completed_hours += h;
        break;
      case Outcome::kRunning:
        c.running_hours += h;
        break;
      case Outcome::kCancelled:
        c.cancelled_hours += h;
        break;
      case Outcome::kFailed:
        c.failed_hours += h;
        break;
      default:
        break;
    }
    if (o == Outcome::kFailed || o == Outcome::kCancelled) {
      auto& f = failures[StateLabel(t.state)];
      f.label = StateLabel(t.state);
      ++f.trials;
      f.hours += h;
    }
    if (t.queue_s) queue.push_back(std::max(0.0, *t.queue_s));
  }
  // What pruning saved: each pruned trial's remaining iterations at its own rate when the log gave
  // the run's length (a slow layout would have run far longer than the median trial), else its
  // shortfall against the median completed wall time.
  std::vector<double> completed_wall;
  for (const TrialSummary& t : trials) {
    if (OutcomeOf(t.state) == Outcome::kCompleted && t.wall_s) completed_wall.push_back(*t.wall_s);
  }
  // Once, not per pruned trial: a study of 10,000 trials prunes thousands (issue 42).
  const std::optional<double> median_wall = Median(completed_wall);
  for (const TrialSummary& t : trials) {
    if (t.state != "pruned") continue;
    ++c.pruned;
    TrialSummary rest;  // the wall time it had left: ResourceHours reads nothing else
    if (t.train_iters && Finite(t.iters_per_s) && *t.iters_per_s > 0) {
      rest.wall_s = static_cast<double>(std::max<int64_t>(0, *t.train_iters - t.steps)) / *t.iters_per_s;
    } else if (median_wall && t.wall_s) {
      rest.wall_s = std::max(0.0, *median_wall - *t.wall_s);
    } else {
      continue;
    }
    c.pruned_saved_hours += ResourceHours(rest, report.meta).value_or(0);
  }
  for (auto& [label, f] : failures) c.failures.push_back(f);
  std::stable_sort(c.failures.begin(), c.failures.end(),
                   [](const auto& x, const auto& y) { return x.trials > y.trials; });
  c.with_queue_time = static_cast<int>(queue.size());
  for (double q : queue) c.queue_total_s += q, c.queue_max_s = std::max(c.queue_max_s, q);
  c.queue_median_s = Median(queue).value_or(0);
  return a;
}

namespace {

// The last step of a trial's objective curve (its last logged step when it has none).
int64_t LastCurveStep(const TrialSummary& t) { return t.curve.empty() ? t.steps : t.curve.back().step; }

// A trial's smoothed objective at `step`: linear between the points of its downsampled curve, its
// final value (the curve's last point) from its last step on.
std::optional<double> SmoothedAt(const TrialSummary& t, int64_t step) {
  if (t.curve.empty() || step >= t.curve.back().step) return t.final_value;
  auto it =
      std::lower_bound(t.curve.begin(), t.curve.end(), step, [](const CurvePoint& p, int64_t s) { return p.step < s; });
  if (it == t.curve.begin() || it->step == step) return it->value;
  const CurvePoint& a = *(it - 1);
  double f = static_cast<double>(step - a.step) / static_cast<double>(it->step - a.step);
  return a.value + f * (it->value - a.value);
}

}  // namespace

Importances ParamImportances(const StudyReport& report) {
  Importances out;
  std::vector<size_t> completed, stopped;
  for (size_t i = 0; i < report.trials.size(); ++i) {
    const TrialSummary& t = report.trials[i];
    if (!Finite(t.final_value)) continue;
    switch (OutcomeOf(t.state)) {
      case Outcome::kCompleted:
        completed.push_back(i);
        break;
      case Outcome::kCancelled:
        stopped.push_back(i);
        break;
      case Outcome::kRunning:
        ++out.running_left_out;
        break;
      case Outcome::kFailed:
        ++out.failed_left_out;
        break;
      default:
        break;
    }
  }
  // Stopped trials compare at equal step; one stopped near the start would pull every trial back
  // there: those before a quarter of the completed trials' median length are left out.
  if (!stopped.empty()) {
    std::vector<double> lengths;
    for (size_t i : completed) lengths.push_back(static_cast<double>(LastCurveStep(report.trials[i])));
    out.min_step = static_cast<int64_t>(Median(lengths).value_or(0) / 4);
    const size_t stopped_with_value = stopped.size();
    std::erase_if(stopped, [&](size_t i) { return LastCurveStep(report.trials[i]) < out.min_step; });
    out.stopped_left_out = static_cast<int>(stopped_with_value - stopped.size());
  }
  std::vector<size_t> rows;
  std::vector<double> values;
  if (stopped.empty()) {
    for (size_t i : completed) rows.push_back(i), values.push_back(*report.trials[i].final_value);
  } else {
    int64_t at = LastCurveStep(report.trials[stopped[0]]);
    for (size_t i : completed) at = std::min(at, LastCurveStep(report.trials[i]));
    for (size_t i : stopped) at = std::min(at, LastCurveStep(report.trials[i]));
    out.at_step = at;
    for (const auto* set : {&completed, &stopped}) {
      for (size_t i : *set) {
        std::optional<double> v = SmoothedAt(report.trials[i], at);
        if (!Finite(v)) continue;
        rows.push_back(i), values.push_back(*v);
        if (set == &stopped) ++out.stopped;
      }
    }
  }
  out.trials = static_cast<int>(rows.size());
  const size_t n = rows.size();
  if (n < 4) {
    out.why_none = fmt::format("{} {}trial{} with a value: at least 4 are needed", n, out.at_step ? "" : "completed ",
                               n == 1 ? "" : "s");
    return out;
  }
  double mean = 0;
  for (double v : values) mean += v;
  mean /= static_cast<double>(n);
  double ss_total = 0;
  for (double v : values) ss_total += std::pow(v - mean, 2);
  for (size_t p = 0; p < report.meta.param_names.size(); ++p) {
    // Group of each row: its value, or its rank bin for a numeric parameter with many values.
    std::vector<std::string> value(n);
    std::vector<double> number(n);
    bool numeric = true;
    for (size_t r = 0; r < n; ++r) {
      const TrialSummary& t = report.trials[rows[r]];
      const ParamCell cell = p < t.param_values.size() ? t.param_values[p] : ParamCell();
      value[r] = cell.text;
      std::optional<double> n = cell.Number();
      numeric = numeric && n.has_value();
      number[r] = n.value_or(0);
    }
    std::map<std::string, int> distinct;
    for (const auto& v : value) distinct.emplace(v, 0);
    std::vector<int> group(n);
    int k = 0;
    bool by_rank = false;
    // A numeric parameter with few trials per value (a continuous one sampled by tpe or random:
    // each trial its own value) is grouped by rank, so that every group holds trials to compare.
    if (numeric && (distinct.size() > 6 || n < 2 * distinct.size())) {
      by_rank = true;
      k = static_cast<int>(std::clamp<size_t>(n / 4, 2, 5));
      std::vector<size_t> order(n);
      for (size_t r = 0; r < n; ++r) order[r] = r;
      std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return number[x] < number[y]; });
      for (size_t q = 0; q < n; ++q) group[order[q]] = static_cast<int>(q * static_cast<size_t>(k) / n);
    } else {
      for (auto& [v, g] : distinct) g = k++;
      for (size_t r = 0; r < n; ++r) group[r] = distinct[value[r]];
    }
    ParamImportance imp;
    imp.param = p;
    imp.groups = k;
    imp.by_rank = by_rank;
    imp.estimable = k >= 2 && n >= 2 * static_cast<size_t>(k);
    if (imp.estimable && ss_total > 0) {
      std::vector<double> sum(k, 0), count(k, 0);
      for (size_t r = 0; r < n; ++r) sum[group[r]] += values[r], ++count[group[r]];
      double ss_between = 0;
      for (int g = 0; g < k; ++g) {
        if (count[g] > 0) ss_between += count[g] * std::pow(sum[g] / count[g] - mean, 2);
      }
      double ms_within = (ss_total - ss_between) / static_cast<double>(n - static_cast<size_t>(k));
      imp.epsilon2 = std::max(0.0, (ss_between - (k - 1) * ms_within) / ss_total);
    }
    out.params.push_back(imp);
  }
  double total = 0;
  for (const auto& imp : out.params) total += imp.epsilon2;
  for (auto& imp : out.params) imp.share = total > 0 ? imp.epsilon2 / total : 0;
  std::stable_sort(out.params.begin(), out.params.end(), [](const ParamImportance& x, const ParamImportance& y) {
    return std::make_tuple(x.estimable, x.epsilon2) > std::make_tuple(y.estimable, y.epsilon2);
  });
  if (ss_total <= 0) {
    out.why_none = out.at_step ? fmt::format("every compared trial has the same value at step {}", *out.at_step)
                               : "every completed trial has the same final value";
  }
  return out;
}

std::vector<BestSoFarPoint> BestSoFar(const StudyReport& report) {
  std::vector<size_t> ended;
  for (size_t i = 0; i < report.trials.size(); ++i) {
    const TrialSummary& t = report.trials[i];
    Outcome o = OutcomeOf(t.state);
    if (t.ended_at && (o == Outcome::kCompleted || o == Outcome::kFailed || o == Outcome::kCancelled)) {
      ended.push_back(i);
    }
  }
  std::stable_sort(ended.begin(), ended.end(),
                   [&](size_t x, size_t y) { return *report.trials[x].ended_at < *report.trials[y].ended_at; });
  std::vector<BestSoFarPoint> out;
  double hours = 0;
  std::optional<double> best;
  for (size_t i : ended) {
    const TrialSummary& t = report.trials[i];
    hours += ResourceHours(t, report.meta).value_or(0);
    BestSoFarPoint p;
    p.hours = hours;
    p.trial = i;
    if (OutcomeOf(t.state) == Outcome::kCompleted && Finite(t.final_value) &&
        (!best || Better(*t.final_value, *best, report.meta.minimize))) {
      best = t.final_value;
      p.improved = true;
    }
    p.best = best;
    out.push_back(p);
  }
  return out;
}

}  // namespace sweep::reports
