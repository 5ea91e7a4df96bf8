// What a trial's logged metrics say for its report entry; see trial_facts.h.
#include "results/trial_facts.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "base/lttb.h"
#include "base/median.h"
#include "base/telemetry.h"

namespace sweep::results {
namespace {

// One metric's points in step order; empty if the trial did not log it.
const store::MetricColumns& SeriesOf(const Columns& metrics, std::string_view name) {
  static const store::MetricColumns kNone;
  auto it = std::lower_bound(metrics.begin(), metrics.end(), name,
                             [](const store::MetricColumns& c, std::string_view n) { return c.name < n; });
  return it != metrics.end() && it->name == name ? *it : kNone;
}

std::vector<double> FiniteValues(const Columns& metrics, std::string_view name) {
  const std::vector<double>& values = SeriesOf(metrics, name).values;
  std::vector<double> v;
  v.reserve(values.size());
  for (double x : values) {
    if (std::isfinite(x)) v.push_back(x);
  }
  return v;
}

// The trial's telemetry series (base/telemetry.h): each downsampled to `points`, on seconds since
// the trial's first sample. `series`: name, steps (Unix seconds), values.
using RawSeries = std::tuple<std::string, std::vector<int64_t>, std::vector<double>>;
std::vector<reports::TrialSummary::TelemetrySeries> TelemetryOf(const std::vector<RawSeries>& series, size_t points) {
  std::vector<reports::TrialSummary::TelemetrySeries> out;
  std::optional<int64_t> first;
  for (const auto& [name, steps, values] : series) {
    if (!steps.empty()) first = std::min(first.value_or(steps.front()), steps.front());
  }
  for (const auto& [name, steps, values] : series) {
    if (steps.empty()) continue;
    std::vector<double> x;
    x.reserve(steps.size());
    for (int64_t step : steps) x.push_back(static_cast<double>(step - *first));
    reports::TrialSummary::TelemetrySeries s;
    s.name = name;
    for (size_t k : LttbIndices(x, values, points)) {
      s.t_s.push_back(x[k]);
      s.values.push_back(values[k]);
    }
    out.push_back(std::move(s));
  }
  return out;
}

// From every point (Store::MetricTable).
std::vector<reports::TrialSummary::TelemetrySeries> TelemetryOf(const Columns& metrics, size_t points) {
  std::vector<RawSeries> series;
  for (const auto& m : metrics) {
    if (IsTelemetryMetric(m.name)) series.emplace_back(m.name, m.steps, m.values);
  }
  return TelemetryOf(series, points);
}

// From the store's bucket means of a long trial's telemetry (one read of the trial's summary).
Result<std::vector<reports::TrialSummary::TelemetrySeries>> TelemetryOf(store::Store& store, int64_t trial_id,
                                                                        const store::TrialSummary& summary,
                                                                        size_t points) {
  std::vector<std::string> names;
  for (const auto& m : summary.metrics) {
    if (IsTelemetryMetric(m.name)) names.push_back(m.name);
  }
  if (names.empty()) return std::vector<reports::TrialSummary::TelemetrySeries>();
  auto full = store.Summary(trial_id, names);
  if (!full.ok()) return full.status();
  std::vector<RawSeries> series;
  for (const auto& name : names) {
    const store::MetricSummary* m = full->Find(name);
    if (!m) continue;
    RawSeries r{name, {}, {}};
    for (const CurvePoint& p : m->Curve()) {
      std::get<1>(r).push_back(p.step);
      std::get<2>(r).push_back(p.value);
    }
    series.push_back(std::move(r));
  }
  return TelemetryOf(series, points);
}

// Downsamples a curve's finite points with LTTB to `budget` points (all kept if fewer).
std::vector<CurvePoint> Downsample(const std::vector<CurvePoint>& curve, size_t budget) {
  // A diverged tail ends the line: finite points only.
  std::vector<double> x, y;
  std::vector<size_t> finite;
  for (size_t i = 0; i < curve.size(); ++i) {
    if (!std::isfinite(curve[i].value)) continue;
    finite.push_back(i);
    x.push_back(static_cast<double>(curve[i].step));
    y.push_back(curve[i].value);
  }
  std::vector<CurvePoint> out;
  for (size_t k : LttbIndices(x, y, budget)) out.push_back(curve[finite[k]]);
  return out;
}

// The level of a metric of a long trial from its summary row alone (its buckets are not read):
// the mean of its finite points after the first (start-up), what Median of every point is for a
// short trial. Over the hundreds of points of a long trial, a few slow iterations (warm-up, a
// checkpoint) move it by their share only.
std::optional<double> LevelOf(const store::TrialSummary& summary, std::string_view name) {
  const store::MetricSummary* m = summary.Find(name);
  if (!m || m->finite == 0) return std::nullopt;
  if (m->points < 3 || m->finite < 2 || !std::isfinite(m->first_value)) return m->sum / static_cast<double>(m->finite);
  return (m->sum - m->first_value) / static_cast<double>(m->finite - 1);
}

// SustainedReach (base/final_objective.h) on a long trial's objective from its buckets, reading
// few points: back from the last bucket, the first whose range of the smoothed curve may hold a
// point not past the target (a NaN in it or the bucket before spoils windows, so that counts too)
// is read point by point, with the kFinalWindow - 1 points before it and the next bucket's first;
// the crossing is interpolated between its last point not past the target and the point after
// (InterpolatedCrossing). Its step, or nullopt when the last point is not past.
Result<std::optional<int64_t>> SustainedReachInBuckets(store::Store& store, int64_t trial_id, const FactsContext& ctx,
                                                       const std::vector<store::SeriesBucket>& buckets) {
  const double target = *ctx.target;
  std::vector<int64_t> start(buckets.size() + 1, 0);  // global index of each bucket's first point
  for (size_t k = 0; k < buckets.size(); ++k) start[k + 1] = start[k] + buckets[k].points;
  const int64_t total = start.back();
  if (total == 0) return std::optional<int64_t>();
  auto may_miss = [&](size_t k) {
    const store::SeriesBucket& b = buckets[k];
    bool spoiled = b.finite < b.points || (k > 0 && buckets[k - 1].finite < buckets[k - 1].points);
    return spoiled || !(ctx.minimize ? b.smooth_max <= target : b.smooth_min >= target);
  };
  for (size_t k = buckets.size(); k-- > 0;) {
    if (!may_miss(k)) continue;
    const store::SeriesBucket& b = buckets[k];
    // The bucket's points with the kFinalWindow - 1 before them, and the next bucket's first point:
    // the crossing may be between the two.
    int64_t to = k + 1 < buckets.size() ? buckets[k + 1].first_step : b.last_step;
    auto points = store.MetricRange(trial_id, ctx.objective, b.first_step, to, kFinalWindow - 1);
    if (!points.ok()) return points.status();
    size_t before = 0, through = 0;  // points before the bucket; points up to its end
    std::vector<double> values;
    for (const CurvePoint& p : *points) {
      before += p.step < b.first_step;
      through += p.step <= b.last_step;
      values.push_back(p.value);
    }
    std::vector<double> smoothed = TrailingMean(values);
    std::optional<size_t> last_miss;
    for (size_t i = through; i-- > before;) {
      if (!AtOrPast(smoothed[i], target, ctx.minimize)) {
        last_miss = i;
        break;
      }
    }
    // The range says the bucket may hold a miss; were it stale, the bucket before is looked at.
    if (!last_miss) continue;
    if (*last_miss + 1 >= points->size()) return std::optional<int64_t>();  // the last point is not past it
    const size_t i = *last_miss + 1;
    return std::optional<int64_t>(
        InterpolatedCrossing((*points)[i - 1].step, smoothed[i - 1], (*points)[i].step, smoothed[i], target));
  }
  // Past the target from the first point on.
  return std::optional<int64_t>(buckets.front().first_step);
}
}  // namespace

// The final objective (base/final_objective.h) of a trial that logged `objective`, from its last
// kFinalWindow points alone (the trial's last rows).
Result<std::optional<FinalObjective>> FinalFromTail(store::Store& store, int64_t trial_id,
                                                    const store::TrialSummary& summary, const std::string& objective) {
  const store::MetricSummary* m = summary.Find(objective);
  if (!m) return std::optional<FinalObjective>();
  // The summary keeps the window (issue 42: no query per trial); one from an older slurmsweep does not.
  if (m->HasFinalWindow()) {
    size_t n = std::min<size_t>(m->recent.size(), kFinalWindow);
    return FinalObjectiveOf(std::vector<double>(m->recent.end() - static_cast<std::ptrdiff_t>(n), m->recent.end()));
  }
  auto tail = store.MetricTail(trial_id, objective, kFinalWindow);
  if (!tail.ok()) return tail.status();
  return FinalObjectiveOf(*tail);
}

// From every point of the trial (Store::MetricTable).
TrialFacts MetricFacts(const Columns& metrics, const FactsContext& ctx) {
  TrialFacts f;
  if (auto total = FiniteValues(metrics, "train_iters"); !total.empty())
    f.train_iters = static_cast<int64_t>(total.back());
  f.tflops_per_gpu = Median(FiniteValues(metrics, "throughput_tflops"));
  f.tokens_per_s = Median(FiniteValues(metrics, "tokens_per_s"));
  f.global_batch_size = Median(FiniteValues(metrics, "global_batch_size"));
  f.telemetry = TelemetryOf(metrics, ctx.curve_points);
  const store::MetricColumns& objective = SeriesOf(metrics, ctx.objective);
  f.final = FinalObjectiveOf(objective.values);
  if (!f.final) return f;
  // One smoothed curve (base/final_objective.h): the target is crossed on it, the charts draw
  // it, and its last point is the final value, so a trial reaches a target equal to its own
  // final value. Its window is the same number of points for every trial.
  std::vector<double> smoothed = TrailingMean(objective.values);
  if (ctx.target) {
    auto reached = SustainedReach(smoothed, *ctx.target, ctx.minimize);
    // Where the curve crosses, between the last point not past and the first past it.
    if (reached && *reached > 0) {
      f.steps_to_target = InterpolatedCrossing(objective.steps[*reached - 1], smoothed[*reached - 1],
                                               objective.steps[*reached], smoothed[*reached], *ctx.target);
    } else if (reached) {
      f.steps_to_target = objective.steps[0];
    }
  }
  // Downsampling raw noisy points would draw the noise's envelope.
  std::vector<CurvePoint> curve(smoothed.size());
  for (size_t i = 0; i < smoothed.size(); ++i) curve[i] = {objective.steps[i], objective.times[i], smoothed[i]};
  f.curve = Downsample(curve, ctx.curve_points);
  return f;
}

// From the store's summary of a long trial (its objective's buckets read) and a few of its points:
// the final value from the objective's last kFinalWindow points, as MetricFacts computes it; the
// step at which the smoothed curve reaches the target for good, exactly (SustainedReachInBuckets); the
// curve from the bucket means (each the mean of store::kMinBucketPoints or more consecutive
// points, a wider smoothing than the trailing mean), from the first point to the final value; levels
// (TFLOP/s, tokens/s, batch size): LevelOf.
Result<TrialFacts> SummaryFacts(store::Store& store, int64_t trial_id, const store::TrialSummary& summary,
                                const FactsContext& ctx) {
  TrialFacts f;
  if (const store::MetricSummary* m = summary.Find("train_iters"); m && std::isfinite(m->last_value))
    f.train_iters = static_cast<int64_t>(m->last_value);
  f.tflops_per_gpu = LevelOf(summary, "throughput_tflops");
  f.tokens_per_s = LevelOf(summary, "tokens_per_s");
  f.global_batch_size = LevelOf(summary, "global_batch_size");
  auto telemetry = TelemetryOf(store, trial_id, summary, ctx.curve_points);
  if (!telemetry.ok()) return telemetry.status();
  f.telemetry = std::move(*telemetry);
  const store::MetricSummary* objective = summary.Find(ctx.objective);
  auto final = FinalFromTail(store, trial_id, summary, ctx.objective);
  if (!final.ok()) return final.status();
  f.final = *final;
  if (!objective || !f.final) return f;
  std::vector<store::SeriesBucket> buckets = objective->buckets;
  if (objective->open.points > 0) buckets.push_back(objective->open);
  if (ctx.target) {
    auto reached = SustainedReachInBuckets(store, trial_id, ctx, buckets);
    if (!reached.ok()) return reached.status();
    f.steps_to_target = *reached;
  }
  // Its first point is the first logged value (a window of one), as on a curve drawn from every point.
  std::vector<CurvePoint> curve = {{objective->first_step, objective->first_time_s, objective->first_value}};
  curve.reserve(buckets.size() + 2);
  for (const store::SeriesBucket& b : buckets) curve.push_back({b.last_step, b.last_time_s, b.Mean()});
  // The last point is the final value, as on a curve drawn from every point.
  if (curve.size() > 1 && curve.back().step == objective->last_step) curve.pop_back();
  curve.push_back({objective->last_step, objective->last_time_s, f.final->value});
  f.curve = Downsample(curve, ctx.curve_points);
  return f;
}

}  // namespace sweep::results
