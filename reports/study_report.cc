// The report's analysis: outcome classes, smoothing, ranking, the speedup decomposition and
// costs; see study_report.h for the definitions.
#include "reports/study_report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

namespace sweep::reports {
namespace {

bool Finite(const std::optional<double>& v) { return v && std::isfinite(*v); }

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

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
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

size_t SmoothingWindow(size_t points) { return std::clamp<size_t>(points / 10, 1, 50); }

std::optional<double> SmoothedFinal(const std::vector<double>& values) {
  if (values.empty()) return std::nullopt;
  size_t w = SmoothingWindow(values.size());
  double sum = 0;
  for (size_t i = values.size() - w; i < values.size(); ++i) sum += values[i];
  return sum / static_cast<double>(w);
}

std::vector<double> Smoothed(const std::vector<double>& values) {
  const size_t w = SmoothingWindow(values.size());
  std::vector<double> out(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    // Summed afresh in SmoothedFinal's order, not as a running sum: the baseline's own smoothed
    // final value is the default target, and it must compare equal to itself at its last point.
    size_t first = i + 1 >= w ? i + 1 - w : 0;
    double sum = 0;
    for (size_t k = first; k <= i; ++k) sum += values[k];
    out[i] = sum / static_cast<double>(i + 1 - first);
  }
  return out;
}

std::optional<size_t> FirstReach(const std::vector<double>& smoothed, double target, bool minimize) {
  for (size_t i = 0; i < smoothed.size(); ++i) {
    if (minimize ? smoothed[i] <= target : smoothed[i] >= target) return i;
  }
  return std::nullopt;
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
      a.recommended = i;
      break;
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
  for (const TrialSummary& t : trials) {
    if (t.state != "pruned") continue;
    ++c.pruned;
    TrialSummary rest = t;
    if (t.train_iters && Finite(t.iters_per_s) && *t.iters_per_s > 0) {
      rest.wall_s = static_cast<double>(std::max<int64_t>(0, *t.train_iters - t.steps)) / *t.iters_per_s;
    } else if (!completed_wall.empty() && t.wall_s) {
      rest.wall_s = std::max(0.0, Median(completed_wall) - *t.wall_s);
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
  c.queue_median_s = Median(queue);
  return a;
}

}  // namespace sweep::reports
