// Early stopping's face: the rules run in order over each trial's series, built for one evaluation
// (EvaluateStopping) or kept across ticks (StoppingState); and the curve helpers the report uses.
// See early_stop.h for the design; the rules are in rules.cc and throughput_rule.cc, the series in
// series.cc, the statistics in statistics.cc.
#include "stopping/early_stop.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "stopping/rules.h"
#include "stopping/series.h"

namespace sweep::stopping {

std::vector<double> Smooth(const std::vector<CurvePoint>& curve, const Smoothing& smoothing) {
  std::vector<double> out;
  out.reserve(curve.size());
  double avg = 0, decay = 1;  // EMA state and (1 - alpha)^k for debiasing
  std::vector<double> window;
  for (const CurvePoint& p : curve) {
    if (!std::isfinite(p.value)) {
      out.push_back(p.value);
      continue;
    }
    switch (smoothing.kind) {
      case SmoothingKind::kNone:
        out.push_back(p.value);
        break;
      case SmoothingKind::kEma:
        avg = (1 - smoothing.ema_alpha) * avg + smoothing.ema_alpha * p.value;
        decay *= 1 - smoothing.ema_alpha;
        out.push_back(decay < 1 ? avg / (1 - decay) : p.value);
        break;
      case SmoothingKind::kRunningMean: {
        window.push_back(p.value);
        if (static_cast<int>(window.size()) > smoothing.window) window.erase(window.begin());
        double sum = 0;
        for (double v : window) sum += v;
        out.push_back(sum / static_cast<double>(window.size()));
        break;
      }
    }
  }
  return out;
}

std::optional<double> TimeToTarget(const std::vector<CurvePoint>& curve, double target, const Smoothing& smoothing) {
  std::vector<double> s = Smooth(curve, smoothing);
  std::optional<size_t> prev;
  for (size_t k = 0; k < curve.size(); ++k) {
    if (!std::isfinite(s[k]) || !std::isfinite(curve[k].time_s)) continue;
    if (s[k] <= target) {
      if (!prev) return curve[k].time_s;
      double t0 = curve[*prev].time_s, t1 = curve[k].time_s;
      return t0 + (t1 - t0) * (s[*prev] - target) / (s[*prev] - s[k]);
    }
    prev = k;
  }
  return std::nullopt;
}

std::optional<double> ProjectedTime(const std::vector<CurvePoint>& curve, int64_t step) {
  std::optional<CurvePoint> first, last;
  for (const CurvePoint& p : curve) {
    if (!std::isfinite(p.time_s)) continue;
    if (!first) first = p;
    last = p;
  }
  if (!first || last->step <= first->step || last->time_s <= first->time_s) return std::nullopt;
  double seconds_per_step = (last->time_s - first->time_s) / static_cast<double>(last->step - first->step);
  return last->time_s + seconds_per_step * static_cast<double>(std::max<int64_t>(0, step - last->step));
}

namespace {

// The rules, on each trial's series (series[i] for trials[i], already refreshed).
std::vector<StopDecision> Decide(const StoppingConfig& config, const std::vector<TrialProgress>& trials,
                                 std::vector<const Series*> series, RulePath path) {
  Context c{config, trials, {std::move(series)}, nullptr, {}, std::vector<bool>(trials.size(), false), {}};
  std::optional<CurveFloors> floors;
  if (path == RulePath::kIndexed && config.throughput.enabled) c.floors = &floors.emplace(c.series.of);
  for (size_t i = 0; i < trials.size(); ++i) {
    c.live.push_back(trials[i].phase != TrialPhase::kStopped);
    c.stall_period = std::max(c.stall_period, c.series[i].stall_period);
  }
  std::map<std::string, size_t> configurations;
  for (size_t i = 0; i < trials.size(); ++i) {
    size_t k = c.kin_members.size();
    if (!trials[i].configuration.empty()) k = configurations.emplace(trials[i].configuration, k).first->second;
    if (k == c.kin_members.size()) c.kin_members.emplace_back();
    c.kin.push_back(k);
    c.kin_members[k].push_back(i);
  }
  StudentT t(config.evidence.noise_z);
  c.student = &t;
  for (size_t i = 0; i < trials.size(); ++i) {
    size_t points = c.series[i].points;
    c.z_loss.push_back(t(points > 0 ? points - 1 : 0));
    c.z_rate.push_back(t(points > 1 ? points - 2 : 0));
  }
  for (size_t i = 0; i < trials.size(); ++i) {
    c.evident.push_back(c.EvidentNow(i));
    c.loss_evident.push_back(c.LossEvidentNow(i));
  }
  // Cheapest certainty first: a diverged trial is stopped whatever the comparisons say.
  if (config.divergence.enabled) Divergence(c);
  if (config.race.enabled) Race(c);
  if (config.halving.enabled) Halving(c);
  if (config.median.enabled) (path == RulePath::kReference ? Median : MedianBySweep)(c);
  if (config.patience.enabled) Patience(c);
  // Last, so that the rivals it stops trials for are known to live on.
  if (config.throughput.enabled) Throughput(c);
  // In the order of `trials` (an id's first place), decisions of one trial in the order made: each decision's
  // place is looked up once, not at each comparison (at 10,000 trials that was 0.02 s a tick).
  std::vector<std::pair<int64_t, size_t>> by_id;
  by_id.reserve(trials.size());
  for (size_t i = 0; i < trials.size(); ++i) by_id.emplace_back(trials[i].id, i);
  std::sort(by_id.begin(), by_id.end());
  std::vector<std::pair<size_t, size_t>> order;  // (place, decision), sorted
  order.reserve(c.decisions.size());
  for (size_t k = 0; k < c.decisions.size(); ++k) {
    auto it = std::lower_bound(by_id.begin(), by_id.end(), std::pair{c.decisions[k].trial_id, size_t{0}});
    order.emplace_back(it != by_id.end() && it->first == c.decisions[k].trial_id ? it->second : 0, k);
  }
  std::sort(order.begin(), order.end());
  std::vector<StopDecision> sorted;
  sorted.reserve(order.size());
  for (const auto& [place, k] : order) sorted.push_back(std::move(c.decisions[k]));
  return sorted;
}

}  // namespace

std::vector<StopDecision> EvaluateStopping(const StoppingConfig& config, const std::vector<TrialProgress>& trials,
                                           RulePath path) {
  std::vector<Series> built;
  built.reserve(trials.size());
  std::vector<const Series*> series;
  for (const TrialProgress& t : trials) {
    Series& s = built.emplace_back(config, t.gpus);
    for (const CurvePoint& p : t.loss) s.AppendLoss(p);
    for (const CurvePoint& p : t.nan_iters) s.AppendNanIters(p);
    s.Refresh();
    series.push_back(&s);
  }
  return Decide(config, trials, std::move(series), path);
}

StoppingState::StoppingState(StoppingConfig config) : config_(std::move(config)) {}
StoppingState::~StoppingState() = default;

bool StoppingState::Has(int64_t trial_id) const { return series_.count(trial_id) > 0; }

void StoppingState::Append(int64_t trial_id, int gpus, const std::vector<CurvePoint>& loss,
                           const std::vector<CurvePoint>& nan_iters) {
  auto it = series_.find(trial_id);
  if (it == series_.end()) it = series_.emplace(trial_id, std::make_unique<Series>(config_, gpus)).first;
  for (const CurvePoint& p : loss) it->second->AppendLoss(p);
  for (const CurvePoint& p : nan_iters) it->second->AppendNanIters(p);
}

void StoppingState::Forget(int64_t trial_id) { series_.erase(trial_id); }

void StoppingState::ForgetAll() { series_.clear(); }

std::vector<StopDecision> StoppingState::Evaluate(const std::vector<TrialProgress>& trials, RulePath path) {
  static const Series* const kNone = new Series(StoppingConfig{}, 1);  // a trial without points
  std::vector<const Series*> series;
  series.reserve(trials.size());
  for (const TrialProgress& t : trials) {
    auto it = series_.find(t.id);
    if (it == series_.end()) {
      series.push_back(kNone);
      continue;
    }
    it->second->Refresh();  // a no-op for a trial without new points (ended, stopped)
    series.push_back(it->second.get());
  }
  return Decide(config_, trials, std::move(series), path);
}

std::optional<StoppingState::View> StoppingState::Inspect(int64_t trial_id) {
  auto it = series_.find(trial_id);
  if (it == series_.end()) return std::nullopt;
  Series& s = *it->second;
  s.Refresh();
  return View{s.t,
              s.step.ToVector(),
              s.s,
              s.area_to,
              s.points,
              s.now,
              s.noise,
              s.se,
              s.rate_rse,
              s.stall_period,
              s.min_s,
              s.nan_total,
              s.first_nonfinite.has_value(),
              s.marks()};
}

size_t StoppingState::MemoryBytes() const {
  size_t bytes = 0;
  for (const auto& [id, s] : series_) bytes += sizeof(Series) + s->MemoryBytes();
  return bytes;
}

}  // namespace sweep::stopping
