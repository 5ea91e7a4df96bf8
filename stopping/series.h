// One trial's curve as the stopping rules see it, extended point by point. Internal to stopping/
// (the module's face is early_stop.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "base/metric_point.h"
#include "base/stopping_settings.h"
#include "stopping/statistics.h"

namespace sweep::stopping {

// One trial's finite loss points on the rules' time axis, smoothed, extended point by point
// (Append) and never rebuilt. Up to kExactPoints finite points every statistic is computed from
// every point, exactly as a from-scratch computation of the whole curve does. Past that the
// memory stays bounded (about 33 KB a trial, whatever its length, and 16 bytes a stall seen):
//  - the curve keeps every stride-th point (knots) and always the latest; the stride doubles
//    (every other knot dropped) whenever there would be more than kMaxKnots, as the store's
//    buckets do, so the knots depend on the points alone, not on how they were chunked. Each
//    knot's smoothed value and running integral are those of the full curve at that point (the
//    smoothing and the integral run over every point); between knots the rules interpolate.
//  - the noise (median absolute second difference) and the typical seconds per iteration are
//    medians of log histograms (within 2.2%); the rate's spread is a running variance (Welford);
//  - stalls are remembered as the intervals slower than 1.5x the typical rate of the first
//    kExactPoints points, and counted as today (over 3x the current typical rate);
//  - the noise at earlier times (NoiseAt): a float at each of its marks, 16 per doubling of the
//    points (about 200 at 40k points).
// Lowest smoothed value and NaN-iteration total run over every point.
// Up to kExactPoints a point costs the rules' four values (t, step, s, area_to); its second difference
// is counted in the histogram from the first point (read once the curve passes kExactPoints); the
// medians of the second differences and of the seconds per iteration are kept by RunningMedian, which
// holds only the values that can still be a median before kExactPoints (23 of them at 1,000 points).
// About 33 KB a trial at 1,000 points (45 KB when every second difference was kept; 34 KB with each
// one's histogram bin kept, two bytes, until kExactPoints). The knots' room
// (kMaxKnots + 2) is taken once, at half that, and thinning is done in place: past 1,024 points a series
// held 47 KB while the doubling vectors had room for 2,048 knots and the histograms every bin.

// The median (the value of rank n / 2, as MedianOf) of the values added so far, exactly, at every
// count n up to `last`, without keeping every value: a value whose rank can no longer be n / 2 at any
// count up to `last` is dropped (counted when below). A value of rank r among c can be the median at
// some count up to `last` only if c - ceil(last / 2) <= r <= last / 2 (its rank grows by at most one a
// value added, the median's by a half): at most last / 2 + 1 values can, and last - c + 1 past
// c = last / 2 (23 at c = 1,000 of last = 1,022). Those are kept sorted; values added wait in a short
// buffer and are merged in when the median is read (a restart adds thousands and reads a few dozen
// medians: a merge each, not a heap operation a value).
class RunningMedian {
 public:
  explicit RunningMedian(size_t last) : last_(last) {}
  void Add(double v);
  // As Add of each of `values` on an empty one.
  void Build(std::vector<double> values);
  // Of the values added; 0 when there are none. Exact while count() <= last.
  double Median() const;
  size_t count() const { return count_; }
  size_t kept() const {
    Flush();
    return sorted_.size();
  }
  size_t MemoryBytes() const { return (sorted_.capacity() + pending_.capacity()) * sizeof(double); }
  // Frees the buffer of values added since the last read, once it is empty: a restart grows it to kPending
  // a trial, and a tick adds one value (issue 42: 1 KB a series of two medians, 10 MB at 10,000 trials).
  void Trim() {
    if (pending_.empty()) std::vector<double>().swap(pending_);
  }
  // Frees the values (the median is not read any more).
  void Release() { std::vector<double>().swap(sorted_), std::vector<double>().swap(pending_); }

 private:
  static constexpr size_t kPending = 64;
  void Flush() const;
  size_t last_, count_ = 0;
  mutable size_t below_ = 0;  // values dropped below the kept ones
  mutable std::vector<double> sorted_, pending_;
};

// A curve's steps, read as int64_t: four bytes each while every step is within 2^31 of the first
// (iterations, and epoch seconds, are), else eight (checked at each push, so any step is held as it came).
class StepColumn {
 public:
  int64_t operator[](size_t k) const { return wide_ ? wides_[k] : base_ + narrow_[k]; }
  int64_t front() const { return (*this)[0]; }
  int64_t back() const { return (*this)[size() - 1]; }
  size_t size() const { return wide_ ? wides_.size() : narrow_.size(); }
  bool empty() const { return size() == 0; }
  void push_back(int64_t n);
  void pop_back() { wide_ ? wides_.pop_back() : narrow_.pop_back(); }
  // Step k set to one the column holds (so it fits as the others do).
  void Set(size_t k, int64_t n) {
    wide_ ? (void)(wides_[k] = n) : (void)(narrow_[k] = static_cast<int32_t>(n - base_));
  }
  void Truncate(size_t n) { wide_ ? wides_.resize(n) : narrow_.resize(n); }
  void reserve(size_t n) { wide_ ? wides_.reserve(n) : narrow_.reserve(n); }
  std::vector<int64_t> ToVector() const;
  size_t MemoryBytes() const { return narrow_.capacity() * sizeof(int32_t) + wides_.capacity() * sizeof(int64_t); }

 private:
  bool wide_ = false;
  int64_t base_ = 0;
  std::vector<int32_t> narrow_;  // step - base_, while every one fits
  std::vector<int64_t> wides_;   // every step, once one did not
};

struct Series {
  static constexpr size_t kExactPoints = 1024;
  static constexpr size_t kMaxKnots = 1024;

  Series(const StoppingConfig& config, int gpus)
      : smoothing(config.smoothing),
        scale(config.axis == TimeAxis::kGpuTime ? std::max(gpus, 1) : 1),
        sign(config.maximize ? -1 : 1) {}

  // The rules' view.
  std::vector<double> t;
  StepColumn step;
  std::vector<double> s;        // smoothed
  std::vector<double> area_to;  // integral of s from the first point to each point
  std::optional<CurvePoint> first_nonfinite;
  double now = 0;  // latest time on the axis of any point, NaN loss or not
  // Standard deviation of the raw points about their trend: the larger of the whole curve's and
  // the recent points' (the last third, at most kRecent), since a loss often grows noisier as it
  // falls (per-batch variation is a larger share of a lower loss) and its early flat points would
  // hide that. Issue 30 replayed other estimates on the bench's six folders (bench/README.md): the last third
  // or the last 8 or 16 second differences alone, their ratio to the loss times the current loss, and second
  // differences detrended by their median (a bending curve's carry its curvature). Those that lost no best trial
  // moved no folder more than 0.004 nearer the evidence floor all at once; the last 16 alone, the level-scaled and the
  // detrended last third lost gpt-100it-pile's best (0.0395 nats). Rule (6)'s margin from each curve's noise at
  // the time compared (NoiseAt) was safe, for the rival's side of it (throughput_rule.cc), and is kept.
  double noise = 0;
  double se = 0;             // standard error of one smoothed value: noise times what smoothing leaves
  double rate_rse = 0;       // relative standard error of Rate(): spread of the per-interval rates
  int64_t stall_period = 0;  // iterations between the periodic stalls it has shown; 0: none seen
  double min_s = kInf;       // lowest smoothed value of every point
  double nan_total = 0;      // of Megatron's NaN-iteration counts (finite ones)
  size_t points = 0;         // finite loss points appended

  bool empty() const { return t.empty(); }
  double first_t() const { return t.front(); }
  double last_t() const { return t.back(); }
  bool Reached(double at) const { return !empty() && first_t() <= at && last_t() >= at; }

  // Linear interpolation; clamped to the ends.
  double At(double at) const { return Lerp(t, s, at); }
  // The same, with the step as abscissa.
  double AtStep(double n) const { return Lerp(step, s, n); }
  // Time-weighted mean of the smoothed curve over [first_t, at] (trapezoids).
  double RunningAverage(double at) const {
    at = std::min(at, t.back());
    if (at <= t.front()) return s.front();
    size_t hi = UpperBound(t, at);  // t[hi - 1] <= at
    size_t lo = hi - 1;
    // At(at), from the same search.
    double here = s.back();
    if (hi < t.size()) {
      double span = t[hi] - t[lo];
      here = span <= 0 ? s[hi] : s[lo] + (s[hi] - s[lo]) * (at - t[lo]) / span;
    }
    double area = area_to[lo] + 0.5 * (s[lo] + here) * (at - t[lo]);
    return area / (at - t.front());
  }
  // Iterations per second of axis time, over the whole curve (warm-up is outside the axis): a
  // stall, once seen, counts in full, and its spread widens the margin (rate_rse).
  std::optional<double> Rate(int min_points) const {
    if (static_cast<int>(points) < min_points || last_t() <= first_t() || step.back() <= step.front()) {
      return std::nullopt;
    }
    return static_cast<double>(step.back() - step.front()) / (last_t() - first_t());
  }

  void AppendLoss(const CurvePoint& p);
  void AppendNanIters(const CurvePoint& p) {
    if (std::isfinite(p.value)) nan_total += p.value;
  }
  // Recomputes noise, se, rate_rse and stall_period if points came since the last call.
  void Refresh();
  // The noise as Refresh computes it, of the points up to axis time `at` (the curve's own noise when
  // `at` is at or past its end), and how many points that is: what rule (6) compares at a time a
  // curve has run past (issue 30). Losses grow noisier as they fall, so a curve's noise at its end
  // overstates its noise at an earlier time. Kept at marks (every point up to 32, then 16 per
  // doubling of the points), at the first mark at or past the points up to `at`: within 1/16 of
  // them, and a few more points rather than fewer. The marks depend on the points alone.
  std::pair<double, size_t> NoiseAt(double at) const;
  const std::vector<float>& marks() const { return marks_; }
  // Heap bytes held (capacities).
  size_t MemoryBytes() const {
    return (t.capacity() + s.capacity() + area_to.capacity() + window_.capacity() + recent_.capacity()) *
               sizeof(double) +
           step.MemoryBytes() + d2_median_.MemoryBytes() + per_median_.MemoryBytes() + d2_hist_.MemoryBytes() +
           per_hist_.MemoryBytes() + slow_.capacity() * sizeof(slow_[0]) + marks_.capacity() * sizeof(marks_[0]);
  }

 private:
  void Push(double at, int64_t n, double smoothed, double area);
  void LeaveExact();
  // The noise of every point so far, as Refresh sets `noise`.
  double NoiseNow() const;
  // Refresh's rate spread and stall period while every point is kept.
  void RefreshRateExact();

  Smoothing smoothing;
  double scale, sign;
  bool dirty_ = true;
  bool exact_ = true;           // every point kept (points <= kExactPoints)
  int64_t stride_ = 1;          // points between knots
  bool tail_ = false;           // the last element of t/step/s/area_to is the latest point, not a knot
  double ema_ = 0, decay_ = 1;  // EMA state and (1 - alpha)^k for debiasing
  std::vector<double> window_;  // running mean's last points
  double raw1_ = 0, raw2_ = 0;  // the last two raw finite values (raw1_ the latest)
  double last_at_ = 0, last_s_ = 0, area_ = 0;
  int64_t last_step_ = 0;
  // Exact: the median of the absolute second differences of the raw values (at most kExactPoints - 2 of
  // them while exact); d2_hist_ counts them all from the first, for when the curve leaves exact.
  RunningMedian d2_median_{kExactPoints - 2};
  // Exact: the median of the seconds per iteration of the intervals whose step advances.
  RunningMedian per_median_{kExactPoints - 1};
  bool per_built_ = false;  // per_median_ holds every interval's (built at the first Refresh)
  static constexpr size_t kRecent = 256;
  std::vector<double> recent_;  // the last kRecent of them, a ring from recent_next_
  size_t recent_next_ = 0, d2_count_ = 0;
  // Past kExactPoints (d2_hist_ filled from the first point):
  LogHistogram d2_hist_, per_hist_;
  double per_n_ = 0, per_mean_ = 0, per_m2_ = 0;  // Welford over the per-interval seconds per iteration
  double per_ref_ = 0;                            // median seconds per iteration of the exact points
  std::vector<std::pair<int64_t, double>> slow_;  // intervals (end step, s/it) slower than 1.5 x per_ref_
  // NoiseAt's marks: the noise of the first MarkPoints(k) points, for k = 0, 1, ..., taken as the
  // curve reaches them.
  std::vector<float> marks_;
  static size_t MarkPoints(size_t k);
};

}  // namespace sweep::stopping
