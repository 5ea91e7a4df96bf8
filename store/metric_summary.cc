// The per-metric summary's arithmetic; see metric_summary.h.
#include "store/metric_summary.h"

#include <algorithm>
#include <cmath>

#include "base/telemetry.h"

namespace sweep::store {

SeriesBucket MergeBuckets(const SeriesBucket& a, const SeriesBucket& b) {
  SeriesBucket m;
  m.first_step = a.first_step;
  m.last_step = b.last_step;
  m.last_time_s = b.last_time_s;
  m.points = a.points + b.points;
  m.finite = a.finite + b.finite;
  m.sum = a.sum + b.sum;
  m.smooth_min = std::min(a.smooth_min, b.smooth_min);
  m.smooth_max = std::max(a.smooth_max, b.smooth_max);
  return m;
}

void MetricSummary::Add(int64_t step, double time_s, double value, std::vector<SeriesBucket>& completed) {
  if (points == 0) {
    first_step = step;
    first_time_s = time_s;
    first_value = value;
  }
  ++points;
  last_step = step;
  last_time_s = time_s;
  last_value = value;
  if (!std::isnan(time_s) && !(max_time_s >= time_s)) max_time_s = time_s;
  bool ok = std::isfinite(value);
  if (ok) {
    ++finite;
    sum += value;
    min = std::min(min, value);
    max = std::max(max, value);
  }
  // The smoothed curve's value at this point: the same summation as base/final_objective.h's.
  double window[kFinalWindow];
  size_t n = std::min(recent.size(), kFinalWindow - 1);
  std::copy(recent.end() - static_cast<std::ptrdiff_t>(n), recent.end(), window);
  window[n] = value;
  double smoothed = WindowMean(window, n + 1);
  recent.push_back(value);
  if (recent.size() > kFinalWindow) recent.erase(recent.begin(), recent.end() - kFinalWindow);
  if (open.points == 0) open.first_step = step;
  if (!std::isnan(smoothed)) {
    open.smooth_min = std::min(open.smooth_min, smoothed);
    open.smooth_max = std::max(open.smooth_max, smoothed);
  }
  open.last_step = step;
  open.last_time_s = time_s;
  ++open.points;
  if (ok) {
    ++open.finite;
    open.sum += value;
  }
  if (open.points == stride) {
    completed.push_back(open);
    ++complete;
    open = SeriesBucket();
  }
}

std::vector<SeriesBucket> MetricSummary::MergeAll(const std::vector<SeriesBucket>& all) {
  std::vector<SeriesBucket> merged;
  merged.reserve(all.size() / 2);
  for (size_t i = 0; i + 1 < all.size(); i += 2) merged.push_back(MergeBuckets(all[i], all[i + 1]));
  stride *= 2;
  complete = static_cast<int64_t>(merged.size());
  return merged;
}

std::optional<double> MetricSummary::Mean() const {
  if (finite == 0) return std::nullopt;
  return sum / static_cast<double>(finite);
}

std::vector<CurvePoint> MetricSummary::Curve() const {
  std::vector<CurvePoint> curve;
  curve.reserve(buckets.size() + 1);
  for (const SeriesBucket& b : buckets) curve.push_back({b.last_step, b.last_time_s, b.Mean()});
  if (open.points > 0) curve.push_back({open.last_step, open.last_time_s, open.Mean()});
  return curve;
}

std::optional<double> MetricSummary::SteadyLevel() const {
  if (finite == 0) return std::nullopt;
  size_t n = buckets.size() + (open.points > 0 ? 1 : 0);
  if (n < 3) {
    if (points < 3 || !std::isfinite(first_value)) return sum / static_cast<double>(finite);
    if (finite < 2) return std::nullopt;
    return (sum - first_value) / static_cast<double>(finite - 1);
  }
  std::vector<double> means;
  means.reserve(n);
  for (size_t i = 1; i < buckets.size(); ++i) {
    if (buckets[i].finite > 0) means.push_back(buckets[i].Mean());
  }
  if (open.finite > 0) means.push_back(open.Mean());
  if (means.empty()) return std::nullopt;
  size_t mid = means.size() / 2;
  std::nth_element(means.begin(), means.begin() + static_cast<std::ptrdiff_t>(mid), means.end());
  double upper = means[mid];
  if (means.size() % 2) return upper;
  double lower = *std::max_element(means.begin(), means.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lower + upper) / 2;
}

MetricSummary SummarizeSeries(std::string name, const std::vector<CurvePoint>& points) {
  MetricSummary s;
  s.name = std::move(name);
  std::vector<SeriesBucket> completed;
  for (const CurvePoint& p : points) {
    if (s.NeedsMerge()) {
      s.buckets = s.MergeAll(s.buckets);
      completed.clear();
    }
    s.Add(p.step, p.time_s, p.value, completed);
    s.buckets.insert(s.buckets.end(), completed.begin(), completed.end());
    completed.clear();
  }
  return s;
}

const MetricSummary* TrialSummary::Find(std::string_view name) const {
  auto it = std::lower_bound(metrics.begin(), metrics.end(), name,
                             [](const MetricSummary& m, std::string_view n) { return m.name < n; });
  return it != metrics.end() && it->name == name ? &*it : nullptr;
}

int64_t TrialSummary::rows() const {
  int64_t n = 0;
  for (const auto& m : metrics) n += m.points;
  return n;
}

int64_t TrialSummary::max_step() const {
  int64_t step = 0;
  for (const auto& m : metrics) {
    if (!IsTelemetryMetric(m.name)) step = std::max(step, m.last_step);  // telemetry steps are Unix seconds
  }
  return step;
}

std::optional<double> TrialSummary::max_time_s() const {
  std::optional<double> t;
  for (const auto& m : metrics) {
    if (IsTelemetryMetric(m.name)) continue;
    if (!std::isnan(m.max_time_s) && (!t || m.max_time_s > *t)) t = m.max_time_s;
  }
  return t;
}

}  // namespace sweep::store
