// The report's analysis: outcome classes, smoothing, ranking, the speedup decomposition and
// costs; see study_report.h for the definitions.
#include "reports/study_report.h"

#include "base/median.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
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

std::optional<SpeedSpread> MeasureSpeedSpread(const StudyReport& report) {
  std::vector<double> speeds;
  if (report.configs) {
    for (const ConfigGroup& g : report.configs->groups) {
      if (Finite(g.iters_per_s) && *g.iters_per_s > 0) speeds.push_back(*g.iters_per_s);
    }
  } else {
    for (const TrialSummary& t : report.trials) {
      if (Finite(t.iters_per_s) && *t.iters_per_s > 0) speeds.push_back(*t.iters_per_s);
    }
  }
  if (speeds.size() < 2) return std::nullopt;
  SpeedSpread s;
  s.fastest = *std::max_element(speeds.begin(), speeds.end());
  s.slowest = *std::min_element(speeds.begin(), speeds.end());
  s.measured = static_cast<int>(speeds.size());
  return s;
}

void ClassifyBySpeed(StudyReport& report, StudyKind guess, const std::string& guess_basis) {
  StudyMeta& m = report.meta;
  auto spread = MeasureSpeedSpread(report);
  const char* unit = report.configs ? "configurations" : "trials";
  if (!spread) {
    m.kind = guess;
    m.kind_basis = fmt::format("no two {} have a measured speed yet; {}", unit, guess_basis);
  } else if (spread->Factor() >= kSpeedDiffers) {
    m.kind = StudyKind::kPerformance;
    m.kind_basis = fmt::format("the speed differs {:.2f}x between the {} {} measured ({:.3g} to {:.3g} iter/s)",
                               spread->Factor(), spread->measured, unit, spread->slowest, spread->fastest);
  } else if (m.rank_by_time_to_target) {
    m.kind = StudyKind::kPerformance;
    m.kind_basis = "ranked by time to target";
  } else {
    m.kind = StudyKind::kHyperparameter;
    m.kind_basis = fmt::format("the {} {} measured run within {:.0f}% of the same speed", spread->measured, unit,
                               100 * (spread->Factor() - 1));
  }
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

std::optional<Decomposition> Decompose(const ConfigSpeed& candidate, const ConfigSpeed& baseline) {
  if (!candidate.time_to_target || !baseline.time_to_target) return std::nullopt;
  if (*candidate.steps_to_target <= 0 || *baseline.steps_to_target <= 0) return std::nullopt;
  Decomposition d;
  d.throughput = *candidate.iters_per_s / *baseline.iters_per_s;
  d.convergence = *baseline.steps_to_target / *candidate.steps_to_target;
  d.time_to_target = d.throughput * d.convergence;
  return d;
}

std::vector<ConfigSpeed> ConfigSpeeds(const StudyReport& report) {
  std::vector<ConfigSpeed> out;
  if (!report.configs) return out;
  for (const ConfigGroup& g : report.configs->groups) {
    ConfigSpeed c;
    c.iters_per_s = g.iters_per_s;
    double steps = 0;
    for (size_t i : g.rows) {
      if (i >= report.trials.size()) continue;
      const TrialSummary& t = report.trials[i];
      if (OutcomeOf(t.state) != Outcome::kCompleted || !Finite(t.final_value)) continue;
      ++c.completed;
      if (t.steps_to_target) ++c.reached, steps += static_cast<double>(*t.steps_to_target);
    }
    if (c.reached > 0) c.steps_to_target = steps / c.reached;
    if (c.steps_to_target && Finite(c.iters_per_s) && *c.iters_per_s > 0)
      c.time_to_target = *c.steps_to_target / *c.iters_per_s;
    out.push_back(c);
  }
  return out;
}

namespace {

// The completed repeat of `g` whose final value is nearest the configuration's mean: the trial the
// charts draw for it.
std::optional<size_t> TypicalTrial(const StudyReport& report, const ConfigGroup& g) {
  std::optional<size_t> best;
  for (size_t i : g.rows) {
    if (i >= report.trials.size() || !g.mean) continue;
    const TrialSummary& t = report.trials[i];
    if (OutcomeOf(t.state) != Outcome::kCompleted || !Finite(t.final_value)) continue;
    if (!best || std::fabs(*t.final_value - *g.mean) < std::fabs(*report.trials[*best].final_value - *g.mean)) best = i;
  }
  return best;
}

// Configuration-level decisions (a study with repeats): see Analysis.
void AnalyzeConfigurations(const StudyReport& report, Analysis& a) {
  const ConfigRanking& r = *report.configs;
  a.config_speed = ConfigSpeeds(report);
  std::vector<size_t> order;  // ranked configurations, best first
  for (size_t g = 0; g < r.groups.size(); ++g) {
    if (r.groups[g].mean && TypicalTrial(report, r.groups[g])) order.push_back(g);
  }
  if (report.meta.rank_by_time_to_target) {
    // Those that reached the target, quickest first, then the others by mean (their order).
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      const auto& tx = a.config_speed[x].time_to_target;
      const auto& ty = a.config_speed[y].time_to_target;
      if (!tx || !ty) return tx.has_value() && !ty.has_value();
      return *tx < *ty;
    });
  }
  a.recommended = std::nullopt, a.runner_up = std::nullopt;
  if (!order.empty()) a.recommended_config = order[0], a.recommended = TypicalTrial(report, r.groups[order[0]]);
  if (order.size() > 1) a.runner_up_config = order[1], a.runner_up = TypicalTrial(report, r.groups[order[1]]);
  if (report.baseline) a.baseline_config = GroupOfRow(r, *report.baseline);
  for (size_t g = 0; g < a.config_speed.size(); ++g) {
    const auto& t = a.config_speed[g].time_to_target;
    if (t && (!a.fastest_config || *t < *a.config_speed[*a.fastest_config].time_to_target)) a.fastest_config = g;
  }
  if (a.fastest_config) a.fastest = TypicalTrial(report, r.groups[*a.fastest_config]);
  if (a.recommended_config && a.baseline_config && *a.recommended_config != *a.baseline_config) {
    const ConfigGroup& x = r.groups[*a.recommended_config];
    const ConfigGroup& b = r.groups[*a.baseline_config];
    if (x.std && b.std)
      a.versus_baseline = WelchTest(*x.mean, *x.std, x.values.size(), *b.mean, *b.std, b.values.size());
    a.decomposition = Decompose(a.config_speed[*a.recommended_config], a.config_speed[*a.baseline_config]);
  } else {
    a.decomposition = std::nullopt;
  }
}

}  // namespace

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
  if (report.configs) AnalyzeConfigurations(report, a);

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

// Ranks of `v`, ties sharing their mean rank.
std::vector<double> Ranks(const std::vector<double>& v) {
  std::vector<size_t> order(v.size());
  for (size_t i = 0; i < v.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return v[x] < v[y]; });
  std::vector<double> rank(v.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && v[order[j + 1]] == v[order[i]]) ++j;
    for (size_t k = i; k <= j; ++k) rank[order[k]] = (static_cast<double>(i + j) / 2) + 1;
    i = j + 1;
  }
  return rank;
}

}  // namespace

double SpearmanRho(const std::vector<double>& x, const std::vector<double>& y) {
  if (x.size() != y.size() || x.size() < 3) return 0;
  std::vector<double> rx = Ranks(x), ry = Ranks(y);
  double n = static_cast<double>(x.size()), mx = (n + 1) / 2, sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    sxy += (rx[i] - mx) * (ry[i] - mx), sxx += (rx[i] - mx) * (rx[i] - mx), syy += (ry[i] - mx) * (ry[i] - mx);
  }
  return sxx > 0 && syy > 0 ? sxy / std::sqrt(sxx * syy) : 0;
}

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
  // The units compared: each trial's parameter values, or each configuration's (its first trial's,
  // the seed left out) with the mean of its repeats' values.
  std::vector<const std::vector<ParamCell>*> cells;
  std::optional<size_t> seed_param;
  if (report.configs) {
    for (size_t p = 0; p < report.meta.param_names.size(); ++p) {
      if (report.meta.param_names[p] == report.configs->seed_name) seed_param = p;
    }
    std::vector<size_t> group_of(report.trials.size(), SIZE_MAX);
    for (size_t g = 0; g < report.configs->groups.size(); ++g) {
      for (size_t i : report.configs->groups[g].rows) {
        if (i < group_of.size()) group_of[i] = g;
      }
    }
    std::map<size_t, std::pair<double, int>> sums;  // group -> sum of values, count
    std::map<size_t, size_t> first_row;
    for (size_t r = 0; r < rows.size(); ++r) {
      size_t g = group_of[rows[r]] != SIZE_MAX ? group_of[rows[r]] : SIZE_MAX - rows[r];  // ungrouped: its own
      auto& [sum, count] = sums[g];
      sum += values[r], ++count;
      first_row.emplace(g, rows[r]);
    }
    values.clear();
    for (const auto& [g, sum_count] : sums) {
      cells.push_back(&report.trials[first_row[g]].param_values);
      values.push_back(sum_count.first / sum_count.second);
    }
    out.configurations = static_cast<int>(values.size());
  } else {
    for (size_t i : rows) cells.push_back(&report.trials[i].param_values);
  }
  out.trials = static_cast<int>(values.size());
  const size_t n = values.size();
  if (n < 4) {
    out.why_none = report.configs
                       ? fmt::format("{} configuration{} with a value: at least 4 are needed", n, n == 1 ? "" : "s")
                       : fmt::format("{} {}trial{} with a value: at least 4 are needed", n,
                                     out.at_step ? "" : "completed ", n == 1 ? "" : "s");
    return out;
  }
  double mean = 0;
  for (double v : values) mean += v;
  mean /= static_cast<double>(n);
  double ss_total = 0;
  for (double v : values) ss_total += std::pow(v - mean, 2);
  std::map<size_t, std::vector<double>> numeric_columns;  // for the correlations between parameters
  for (size_t p = 0; p < report.meta.param_names.size(); ++p) {
    if (seed_param && p == *seed_param) continue;
    // Group of each row: its value, or its rank bin for a numeric parameter with many values.
    std::vector<std::string> value(n);
    std::vector<double> number(n);
    bool numeric = true;
    for (size_t r = 0; r < n; ++r) {
      const ParamCell cell = p < cells[r]->size() ? (*cells[r])[p] : ParamCell();
      value[r] = cell.text;
      std::optional<double> n = cell.Number();
      numeric = numeric && n.has_value();
      number[r] = n.value_or(0);
    }
    std::map<std::string, int> distinct;
    for (const auto& v : value) distinct.emplace(v, 0);
    if (numeric && distinct.size() > 1) numeric_columns[p] = number;
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
  for (auto x = numeric_columns.begin(); x != numeric_columns.end(); ++x) {
    for (auto y = std::next(x); y != numeric_columns.end(); ++y) {
      double rho = SpearmanRho(x->second, y->second);
      if (std::fabs(rho) >= kCorrelatedDraws) out.correlated.push_back({x->first, y->first, rho});
    }
  }
  std::stable_sort(
      out.correlated.begin(), out.correlated.end(),
      [](const ParamCorrelation& x, const ParamCorrelation& y) { return std::fabs(x.rho) > std::fabs(y.rho); });
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
