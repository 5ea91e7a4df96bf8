// Early-stopping rules on loss versus training time; see early_stop.h for the design.
#include "stopping/early_stop.h"

#include <boost/math/distributions/students_t.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

namespace sweep {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// ---------------------------------------------------------------------------------------------
// Curves

// One trial's finite loss points on the rules' time axis, smoothed.
// y at x on the piecewise-linear curve through (xs[k], ys[k]), xs ascending; clamped to the ends.
// std::upper_bound(xs, x) (the first element above x) for xs ascending, found by starting where x
// would be were the xs evenly spaced (knots of a curve logged at a steady pace nearly are) and
// walking from there; a binary search when that guess is far off. The rules look up every trial's
// curve at many times per tick, and a binary search over 1024 knots misses the cache at each step.
template <class X>
size_t UpperBound(const std::vector<X>& xs, double x) {
  auto above = [](double v, X e) { return v < static_cast<double>(e); };
  size_t n = xs.size();
  double lo = static_cast<double>(xs.front()), span = static_cast<double>(xs.back()) - lo;
  if (n < 16 || !(span > 0) || x < lo || x >= static_cast<double>(xs.back())) {
    return std::upper_bound(xs.begin(), xs.end(), x, above) - xs.begin();
  }
  size_t g = std::min(n - 1, static_cast<size_t>((x - lo) / span * static_cast<double>(n - 1)));
  for (int walk = 0; walk < 8; ++walk) {
    if (static_cast<double>(xs[g]) <= x) {
      ++g;  // g < n: x < xs.back()
    } else if (g > 0 && static_cast<double>(xs[g - 1]) > x) {
      --g;
    } else {
      return g;
    }
  }
  return std::upper_bound(xs.begin(), xs.end(), x, above) - xs.begin();
}

template <class X, class Y>
double Lerp(const std::vector<X>& xs, const std::vector<Y>& ys, double x) {
  if (x <= static_cast<double>(xs.front())) return static_cast<double>(ys.front());
  if (x >= static_cast<double>(xs.back())) return static_cast<double>(ys.back());
  size_t hi = UpperBound(xs, x);
  size_t lo = hi - 1;
  double x0 = static_cast<double>(xs[lo]), span = static_cast<double>(xs[hi]) - x0;
  double y0 = static_cast<double>(ys[lo]), y1 = static_cast<double>(ys[hi]);
  return span <= 0 ? y1 : y0 + (y1 - y0) * (x - x0) / span;
}

// A robust scale kept in bounded memory once a curve is long: a histogram of log2(value) with
// kBinsPerOctave bins per octave over [2^kMinOctave, 2^kMaxOctave) (values outside are clamped to the
// end bins; zero has a bin of its own). Its median is the geometric middle of the bin holding the
// middle value: within 2.2% of the exact one. Order-independent, so the same points give the same
// histogram however they arrived.
class LogHistogram {
 public:
  void Add(double v) {
    if (counts_.empty()) counts_.assign(kBins + 1, 0);
    ++counts_[Bin(v)];
    ++total_;
  }
  bool empty() const { return total_ == 0; }
  size_t MemoryBytes() const { return counts_.capacity() * sizeof(uint32_t); }
  // The value of rank total / 2 (the upper median, as MedianOf).
  double Median() const {
    if (total_ == 0) return 0;
    uint64_t rank = total_ / 2, seen = 0;
    for (size_t b = 0; b < counts_.size(); ++b) {
      seen += counts_[b];
      if (seen > rank) return b == 0 ? 0 : std::exp2(kMinOctave + (static_cast<double>(b - 1) + 0.5) / kBinsPerOctave);
    }
    return 0;
  }

 private:
  static constexpr int kBinsPerOctave = 16, kMinOctave = -48, kMaxOctave = 32;
  static constexpr size_t kBins = static_cast<size_t>((kMaxOctave - kMinOctave) * kBinsPerOctave);
  static size_t Bin(double v) {
    if (!(v > 0)) return 0;
    double x = (std::log2(v) - kMinOctave) * kBinsPerOctave;
    if (x < 0) return 1;
    if (x >= static_cast<double>(kBins)) return kBins;
    return 1 + static_cast<size_t>(x);
  }
  std::vector<uint32_t> counts_;  // [0]: zeros; then the log bins
  uint64_t total_ = 0;
};

}  // namespace

// One trial's finite loss points on the rules' time axis, smoothed, extended point by point
// (Append) and never rebuilt. Up to kExactPoints finite points every statistic is computed from
// every point, exactly as a from-scratch computation of the whole curve does. Past that the
// memory stays bounded (about 45 KB a trial, whatever its length):
//  - the curve keeps every stride-th point (knots) and always the latest; the stride doubles
//    (every other knot dropped) whenever there would be more than kMaxKnots, as the store's
//    buckets do, so the knots depend on the points alone, not on how they were chunked. Each
//    knot's smoothed value and running integral are those of the full curve at that point (the
//    smoothing and the integral run over every point); between knots the rules interpolate.
//  - the noise (median absolute second difference) and the typical seconds per iteration are
//    medians of log histograms (within 2.2%); the rate's spread is a running variance (Welford);
//  - stalls are remembered as the intervals slower than 1.5x the typical rate of the first
//    kExactPoints points, and counted as today (over 3x the current typical rate).
// Lowest smoothed value and NaN-iteration total run over every point.
struct StoppingSeries {
  static constexpr size_t kExactPoints = 1024;
  static constexpr size_t kMaxKnots = 1024;

  StoppingSeries(const StoppingConfig& config, int gpus)
      : smoothing(config.smoothing),
        scale(config.axis == TimeAxis::kGpuTime ? std::max(gpus, 1) : 1),
        sign(config.maximize ? -1 : 1) {}

  // The rules' view.
  std::vector<double> t;
  std::vector<int64_t> step;
  std::vector<double> s;        // smoothed
  std::vector<double> area_to;  // integral of s from the first point to each point
  std::optional<CurvePoint> first_nonfinite;
  double now = 0;  // latest time on the axis of any point, NaN loss or not
  // Standard deviation of the raw points about their trend: the larger of the whole curve's and
  // the recent points' (the last third, at most kRecent), since a loss often grows noisier as it
  // falls (per-batch variation is a larger share of a lower loss) and its early flat points would
  // hide that.
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
  // Heap bytes held (capacities).
  size_t MemoryBytes() const {
    return (t.capacity() + s.capacity() + area_to.capacity() + d2_.capacity() + window_.capacity() +
            recent_.capacity()) *
               sizeof(double) +
           step.capacity() * sizeof(int64_t) + d2_hist_.MemoryBytes() + per_hist_.MemoryBytes() +
           slow_.capacity() * sizeof(slow_[0]);
  }

 private:
  void Push(double at, int64_t n, double smoothed, double area);
  void LeaveExact();

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
  std::vector<double> d2_;  // exact: absolute second differences of the raw values
  static constexpr size_t kRecent = 256;
  std::vector<double> recent_;  // the last kRecent of them, a ring from recent_next_
  size_t recent_next_ = 0, d2_count_ = 0;
  // Past kExactPoints:
  LogHistogram d2_hist_, per_hist_;
  double per_n_ = 0, per_mean_ = 0, per_m2_ = 0;  // Welford over the per-interval seconds per iteration
  double per_ref_ = 0;                            // median seconds per iteration of the exact points
  std::vector<std::pair<int64_t, double>> slow_;  // intervals (end step, s/it) slower than 1.5 x per_ref_
};

namespace {

double MedianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

constexpr double kNoiseFromMad = 1.4826;

// Standard deviation of a curve's raw points about its trend, from the median absolute second
// difference (a smooth trend's second differences are small; white noise's have variance 6
// sigma^2), so a few steep early points or spikes do not inflate it.
double NoiseSigma(std::vector<double> abs_d2) { return kNoiseFromMad * MedianOf(std::move(abs_d2)) / std::sqrt(6.0); }

// What smoothing leaves of white noise of unit deviation, after n points.
double SmoothedFraction(const Smoothing& smoothing, size_t n) {
  switch (smoothing.kind) {
    case SmoothingKind::kNone:
      return 1;
    case SmoothingKind::kEma: {
      // The debiased EMA of n points weighs them alpha (1-alpha)^k / (1 - (1-alpha)^n): the sum of
      // the squared weights is alpha / (2 - alpha) x (1 + b^n) / (1 - b^n), b = 1 - alpha, which is
      // 1 at one point and falls to its limit as points come (1.40x the limit at 5 points, 1.06x at 10).
      double a = smoothing.ema_alpha, bn = std::pow(1 - a, static_cast<double>(std::max<size_t>(1, n)));
      return bn < 1 ? std::sqrt(a / (2 - a) * (1 + bn) / (1 - bn)) : 1;
    }
    case SmoothingKind::kRunningMean:
      return 1 / std::sqrt(static_cast<double>(std::max<size_t>(1, std::min<size_t>(n, smoothing.window))));
  }
  return 1;
}

// noise_z read as a Student-t quantile with `df` degrees of freedom: the quantile whose one-sided
// probability is the normal's at noise_z (EvidenceConfig). Memoised per evaluation: boost's inverse
// takes microseconds, and the rules ask it for every pair of trials. Past 1000 degrees of freedom
// it is within 0.1% of noise_z.
class StudentT {
 public:
  explicit StudentT(double z) : z_(z) {}
  double operator()(size_t points_minus_one) {
    if (!(z_ > 0) || !std::isfinite(z_)) return z_;
    size_t df = std::clamp<size_t>(points_minus_one, 1, 1000);
    auto [it, fresh] = memo_.try_emplace(df, 0.0);
    if (fresh) {
      double tail = 0.5 * std::erfc(z_ / std::sqrt(2.0));  // one-sided probability beyond noise_z
      it->second = tail > 1e-300 ? boost::math::quantile(boost::math::complement(
                                       boost::math::students_t_distribution<double>(static_cast<double>(df)), tail))
                                 : kInf;
    }
    return it->second;
  }

 private:
  double z_;
  std::map<size_t, double> memo_;
};

// Seconds per iteration of each interval whose step advances.
std::vector<double> PerInterval(const std::vector<double>& t, const std::vector<int64_t>& step) {
  std::vector<double> per;
  for (size_t k = 1; k < t.size(); ++k) {
    if (step[k] > step[k - 1]) per.push_back((t[k] - t[k - 1]) / static_cast<double>(step[k] - step[k - 1]));
  }
  return per;
}

// Relative standard error of a curve's mean iteration rate: the spread of its per-interval
// seconds per iteration over the mean, over the square root of the intervals.
double RateRse(const std::vector<double>& per) {
  if (per.size() < 2) return kInf;
  double mean = 0, var = 0;
  for (double v : per) mean += v / static_cast<double>(per.size());
  for (double v : per) var += (v - mean) * (v - mean) / static_cast<double>(per.size() - 1);
  return mean > 0 ? std::sqrt(var / static_cast<double>(per.size())) / mean : kInf;
}

// Iterations between a curve's stalls (checkpoints, evaluation, data-loader refills: intervals
// taking over 3x the median time per iteration), the longest gap seen; with one stall, the
// iterations before it. 0 when none has shown. Such stalls come every so many iterations, so a
// rate is trusted only over a window of twice the longest period any trial of the study shows.
int64_t StallPeriod(const std::vector<double>& t, const std::vector<int64_t>& step, const std::vector<double>& per) {
  if (per.size() < 3) return 0;
  double typical = MedianOf(per);
  int64_t last = step.front(), period = 0;
  for (size_t k = 1; k < t.size(); ++k) {
    if (step[k] <= step[k - 1]) continue;
    if ((t[k] - t[k - 1]) / static_cast<double>(step[k] - step[k - 1]) > 3 * typical) {
      period = std::max(period, step[k] - last);
      last = step[k];
    }
  }
  return period;
}

}  // namespace

void StoppingSeries::AppendLoss(const CurvePoint& p) {
  if (!std::isfinite(p.time_s)) return;
  now = std::max(now, p.time_s * scale);
  if (!std::isfinite(p.value)) {
    if (!first_nonfinite) first_nonfinite = p;
    return;
  }
  dirty_ = true;
  double v = sign * p.value;
  // The smoothing, as Smooth() computes it point by point.
  double smoothed = v;
  switch (smoothing.kind) {
    case SmoothingKind::kNone:
      break;
    case SmoothingKind::kEma:
      ema_ = (1 - smoothing.ema_alpha) * ema_ + smoothing.ema_alpha * v;
      decay_ *= 1 - smoothing.ema_alpha;
      smoothed = decay_ < 1 ? ema_ / (1 - decay_) : v;
      break;
    case SmoothingKind::kRunningMean: {
      window_.push_back(v);
      if (static_cast<int>(window_.size()) > smoothing.window) window_.erase(window_.begin());
      double sum = 0;
      for (double w : window_) sum += w;
      smoothed = sum / static_cast<double>(window_.size());
      break;
    }
  }
  if (points >= 2) {
    double d2 = std::abs(v - 2 * raw1_ + raw2_);
    if (exact_) d2_.push_back(d2);
    else d2_hist_.Add(d2);
    if (recent_.size() < kRecent) recent_.push_back(d2);
    else recent_[recent_next_] = d2;
    recent_next_ = (recent_next_ + 1) % kRecent;
    ++d2_count_;
  }
  raw2_ = raw1_, raw1_ = v;
  // Time must not run backwards for interpolation; a restart glitch is clamped, not trusted.
  double at = p.time_s * scale;
  if (points > 0 && at < last_at_) at = last_at_;
  if (points > 0) {
    area_ += 0.5 * (last_s_ + smoothed) * (at - last_at_);
    if (!exact_ && p.step > last_step_) {
      double per = (at - last_at_) / static_cast<double>(p.step - last_step_);
      per_hist_.Add(per);
      per_n_ += 1;
      double delta = per - per_mean_;
      per_mean_ += delta / per_n_;
      per_m2_ += delta * (per - per_mean_);
      if (per > 1.5 * per_ref_) slow_.emplace_back(p.step, per);
    }
  }
  min_s = std::min(min_s, smoothed);
  Push(at, p.step, smoothed, area_);
  last_at_ = at, last_s_ = smoothed, last_step_ = p.step;
  ++points;
  if (exact_ && points > kExactPoints) LeaveExact();
}

// Appends point number `points` (0-based) as a knot or as the tail, then thins the knots.
void StoppingSeries::Push(double at, int64_t n, double smoothed, double area) {
  if (tail_) {
    t.pop_back(), step.pop_back(), s.pop_back(), area_to.pop_back();
    tail_ = false;
  }
  t.push_back(at), step.push_back(n), s.push_back(smoothed), area_to.push_back(area);
  tail_ = points % static_cast<size_t>(stride_) != 0;
  size_t knots = t.size() - (tail_ ? 1 : 0);
  if (knots <= kMaxKnots) return;
  // Every other knot goes (knot j is point j * stride); the latest point stays as the tail.
  std::vector<double> t2, s2, a2;
  std::vector<int64_t> n2;
  for (auto* v : {&t2, &s2, &a2}) v->reserve(kMaxKnots + 2);
  n2.reserve(kMaxKnots + 2);
  for (size_t j = 0; j < t.size(); ++j) {
    if (j % 2 != 0 && j + 1 != t.size()) continue;
    t2.push_back(t[j]), n2.push_back(step[j]), s2.push_back(s[j]), a2.push_back(area_to[j]);
  }
  stride_ *= 2;
  tail_ = points % static_cast<size_t>(stride_) != 0;
  t.swap(t2), step.swap(n2), s.swap(s2), area_to.swap(a2);
}

// From here on the statistics are kept in bounded memory (see the struct's comment); they start
// from every exact point, so the result does not depend on when the switch happened.
void StoppingSeries::LeaveExact() {
  exact_ = false;
  for (double d : d2_) d2_hist_.Add(d);
  std::vector<double>().swap(d2_);
  std::vector<double> per = PerInterval(t, step);  // every point is still a knot
  per_ref_ = MedianOf(per);
  size_t k = 0;
  for (size_t j = 1; j < t.size(); ++j) {
    if (step[j] <= step[j - 1]) continue;
    double v = per[k++];
    per_hist_.Add(v);
    per_n_ += 1;
    double delta = v - per_mean_;
    per_mean_ += delta / per_n_;
    per_m2_ += delta * (v - per_mean_);
    if (v > 1.5 * per_ref_) slow_.emplace_back(step[j], v);
  }
}

void StoppingSeries::Refresh() {
  if (!dirty_) return;
  dirty_ = false;
  if (exact_) {
    noise = NoiseSigma(d2_);
    std::vector<double> per = PerInterval(t, step);
    rate_rse = RateRse(per);
    stall_period = StallPeriod(t, step, per);
  } else {
    noise = kNoiseFromMad * d2_hist_.Median() / std::sqrt(6.0);
    double mean = per_mean_, var = per_n_ > 1 ? per_m2_ / (per_n_ - 1) : 0;
    rate_rse = per_n_ >= 2 && mean > 0 ? std::sqrt(var / per_n_) / mean : kInf;
    double typical = per_hist_.Median();
    int64_t last = step.front();
    stall_period = 0;
    for (const auto& [at_step, per] : slow_) {
      if (per <= 3 * typical) continue;
      stall_period = std::max(stall_period, at_step - last);
      last = at_step;
    }
  }
  // The recent noise: the last third of the second differences (at least 3, at most kRecent).
  size_t k = std::min(recent_.size(), std::max<size_t>(3, std::min(kRecent, d2_count_ / 3)));
  if (k >= 3) {
    std::vector<double> last;
    last.reserve(k);
    for (size_t m = 0; m < k; ++m) last.push_back(recent_[(recent_next_ + kRecent - 1 - m) % kRecent]);
    noise = std::max(noise, NoiseSigma(std::move(last)));
  }
  se = noise * SmoothedFraction(smoothing, points);
}

namespace {

using Series = StoppingSeries;

double Quantile(std::vector<double> v, double q) {
  double pos = q * static_cast<double>(v.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, v.size() - 1);
  // The lo-th and hi-th smallest, without sorting them all.
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(lo), v.end());
  double at_lo = v[lo];
  double at_hi = hi == lo ? at_lo : *std::min_element(v.begin() + static_cast<std::ptrdiff_t>(hi), v.end());
  return at_lo + (at_hi - at_lo) * (pos - static_cast<double>(lo));
}

// Shared by the rules during one evaluation.
struct Context {
  const StoppingConfig& config;
  const std::vector<TrialProgress>& trials;
  // Each trial's series, not copied: the caller's (StoppingState) or built for this evaluation.
  struct SeriesList {
    std::vector<const Series*> of;
    const Series& operator[](size_t i) const { return *of[i]; }
    size_t size() const { return of.size(); }
  } series;
  std::vector<bool> live;     // running or completed, and not stopped during this evaluation
  std::vector<bool> decided;  // stopped during this evaluation
  std::vector<StopDecision> decisions;
  int64_t stall_period = 0;  // the longest any trial has shown
  // Per trial: noise_z as a Student-t quantile for its loss noise (df = points - 1) and for its
  // rate's spread (df = intervals - 1), so a curve of few points gets a wider margin.
  std::vector<double> z_loss = {}, z_rate = {};
  // A curve's standard error, and its rate's relative one, times that quantile.
  double Se(size_t i) const { return z_loss[i] * series[i].se; }
  double Noise(size_t i) const { return z_loss[i] * series[i].noise; }
  double RateSe(size_t i) const { return z_rate[i] * series[i].rate_rse; }

  bool Candidate(size_t i) const {
    return trials[i].phase == TrialPhase::kRunning && !decided[i] && !series[i].empty();
  }
  // Trial i has shown enough to be compared, or to be compared with: min_points finite points
  // and min_fraction of the budget run. A completed trial's curve is all there will be.
  bool Evident(size_t i) const { return evident[i]; }
  // EvidentNow of each trial, at the start of the evaluation (it does not change during one).
  std::vector<bool> evident = {};
  bool EvidentNow(size_t i) const {
    return Shown(i, config.evidence.min_points) && (trials[i].phase == TrialPhase::kCompleted ||
                                                    series[i].step.back() - series[i].step.front() >= 2 * stall_period);
  }
  // Trial i has `points` finite points and min_fraction of the budget, or has completed.
  bool Shown(size_t i, int points) const {
    const Series& s = series[i];
    if (s.empty()) return false;
    if (trials[i].phase == TrialPhase::kCompleted) return true;
    if (static_cast<int>(s.points) < points) return false;
    return config.budget_s <= 0 || s.last_t() >= config.evidence.min_fraction * config.budget_s;
  }
  // Enough to compare its loss at equal time with another's: min_loss_points and min_fraction, but
  // not the stall window, which is for rates (a stall is already paid for in a curve's loss at a time).
  bool LossEvident(size_t i) const { return loss_evident[i]; }
  std::vector<bool> loss_evident = {};
  bool LossEvidentNow(size_t i) const { return Shown(i, config.evidence.min_loss_points); }
  // What a difference between smoothed values of trials i and j must exceed: `floor`, and
  // noise_z standard errors of that difference (each curve's read as a Student-t quantile).
  double Margin(size_t i, size_t j, double floor = 0) const { return std::max(floor, std::hypot(Se(i), Se(j))); }
  // A value the rules judged, in the metric's own units (the rules see its negation when maximised).
  double User(double v) const { return config.maximize ? -v : v; }
  void Stop(size_t i, std::string rule, std::string reason, double value, double threshold, int refs) {
    decided[i] = true;
    live[i] = false;
    decisions.push_back({trials[i].id, std::move(rule), std::move(reason), series[i].now, value, threshold, refs});
  }
};

std::string Num(double v) { return fmt::format("{:.4g}", v); }
// How a reason names another trial: its key when the caller gave one (what status and the
// report show), else its id.
std::string Name(const TrialProgress& t) { return t.name.empty() ? std::to_string(t.id) : t.name; }
std::string Secs(double v) { return fmt::format("{:.4g}s", v); }

// ---------------------------------------------------------------------------------------------
// Rules

void Divergence(Context& c) {
  const DivergenceRuleConfig& cfg = c.config.divergence;
  for (size_t i = 0; i < c.trials.size(); ++i) {
    const TrialProgress& trial = c.trials[i];
    if (trial.phase != TrialPhase::kRunning || c.decided[i]) continue;
    const Series& s = c.series[i];
    if (cfg.nan && s.first_nonfinite) {
      const CurvePoint& p = *s.first_nonfinite;
      c.Stop(i, "divergence", fmt::format("loss is {} at step {} (t={})", p.value, p.step, Secs(p.time_s)), p.value, 0,
             0);
      continue;
    }
    if (cfg.max_nan_iters) {
      double total = s.nan_total;
      if (total > static_cast<double>(*cfg.max_nan_iters)) {
        c.Stop(i, "divergence",
               fmt::format("{} iterations with NaN loss or gradients > max_nan_iters {}", total, *cfg.max_nan_iters),
               total, static_cast<double>(*cfg.max_nan_iters), 0);
        continue;
      }
    }
    if (s.empty() || s.last_t() < cfg.grace_s) continue;
    double now = s.s.back();  // what the rules judge: the metric, negated when maximised
    const char* worse = c.config.maximize ? "<" : ">";
    if (cfg.max_loss && now > c.User(*cfg.max_loss)) {
      c.Stop(i, "divergence",
             fmt::format("at t={}: smoothed {} {} {} {}", Secs(s.last_t()), c.config.maximize ? "value" : "loss",
                         Num(c.User(now)), worse, Num(*cfg.max_loss)),
             c.User(now), *cfg.max_loss, 0);
      continue;
    }
    if (cfg.spike_factor) {
      // Minimised: above factor x its lowest (positive) loss. Maximised: below its highest
      // (positive) value / factor; in the negated values the best is then negative.
      double best = s.min_s;
      bool applies = c.config.maximize ? best < 0 : best > 0;
      double bound = c.config.maximize ? best / *cfg.spike_factor : best * *cfg.spike_factor;
      if (applies && now > bound) {
        c.Stop(i, "divergence",
               fmt::format("at t={}: smoothed value {} {} {} its best {}", Secs(s.last_t()), Num(c.User(now)), worse,
                           c.config.maximize ? fmt::format("1/{} x", Num(*cfg.spike_factor))
                                             : fmt::format("{} x", Num(*cfg.spike_factor)),
                           Num(c.User(best))),
               c.User(now), c.User(bound), 0);
      }
    }
  }
}

// Axis time at which the smoothed curve first reaches `target`, interpolated between the points
// around the crossing; nullopt if it never does.
std::optional<double> ReachTime(const Series& s, double target) {
  for (size_t k = 0; k < s.s.size(); ++k) {
    if (s.s[k] > target) continue;
    if (k == 0) return s.t[0];
    return s.t[k - 1] + (s.t[k] - s.t[k - 1]) * (s.s[k - 1] - target) / (s.s[k - 1] - s.s[k]);
  }
  return std::nullopt;
}

void Race(Context& c) {
  const RaceRuleConfig& cfg = c.config.race;
  double target = c.User(*c.config.target_loss);
  // Any trial that got there counts, stopped ones included: the time it took is a measured fact,
  // once its curve has min_points behind the crossing (a smoothed dip of two points is not).
  std::optional<size_t> winner;
  double best = kInf;
  std::vector<std::optional<double>> reached(c.trials.size());  // ReachTime of those with min_points
  for (size_t j = 0; j < c.trials.size(); ++j) {
    if (static_cast<int>(c.series[j].points) < c.config.evidence.min_points) continue;
    reached[j] = ReachTime(c.series[j], target);
    if (reached[j] && *reached[j] < best) best = *reached[j], winner = j;
  }
  if (!winner) return;
  double limit = best * (1 + cfg.slack);
  for (size_t i = 0; i < c.trials.size(); ++i) {
    if (!c.Candidate(i) || !c.Evident(i)) continue;
    const Series& me = c.series[i];
    // A running evident trial has min_points: reached[i] is its ReachTime.
    if (me.last_t() <= limit || me.last_t() < cfg.grace_s || reached[i]) continue;
    c.Stop(i, "race",
           fmt::format("at t={}: smoothed value {} has not reached the target {}, which trial {} reached at t={}{}",
                       Secs(me.last_t()), Num(c.User(me.s.back())), Num(c.User(target)), Name(c.trials[*winner]),
                       Secs(best), cfg.slack > 0 ? fmt::format(" (+ slack {:.3g}: {})", cfg.slack, Secs(limit)) : ""),
           c.User(me.s.back()), c.User(target), 1);
  }
}

void Halving(Context& c) {
  const HalvingRuleConfig& cfg = c.config.halving;
  double max_time = cfg.max_time_s > 0 ? cfg.max_time_s : c.config.budget_s > 0 ? c.config.budget_s : kInf;
  // Per rung (by index), every trial that reached it with its smoothed value there, sorted: the
  // same for every trial judged, so built once per evaluation.
  std::vector<std::optional<std::vector<std::pair<double, size_t>>>> at_rung;
  for (size_t i = 0; i < c.trials.size(); ++i) {
    if (!c.Candidate(i) || !c.Evident(i)) continue;
    const Series& me = c.series[i];
    // Every rung the trial has passed, earliest first: a rung is judged again as more trials
    // reach it, so the answer does not depend on who happened to arrive first.
    size_t k = 0;
    for (double rung = cfg.min_time_s; rung < max_time && rung <= me.last_t(); rung *= cfg.eta, ++k) {
      if (!me.Reached(rung)) continue;
      if (at_rung.size() <= k) at_rung.resize(k + 1);
      if (!at_rung[k]) {
        auto& v = at_rung[k].emplace();
        for (size_t j = 0; j < c.series.size(); ++j) {
          if (c.series[j].Reached(rung)) v.emplace_back(c.series[j].At(rung), j);
        }
        std::sort(v.begin(), v.end());
      }
      const std::vector<std::pair<double, size_t>>& values = *at_rung[k];
      if (static_cast<int>(values.size()) < cfg.min_trials) continue;
      size_t keep = std::max<size_t>(1, static_cast<size_t>(static_cast<double>(values.size()) / cfg.eta));
      auto [cut, at_cut] = values[keep - 1];
      double mine = me.At(rung);
      // The best at a rung may since have been stopped by another rule; the best live trial stays,
      // or every trial could be stopped for the sake of ones already gone.
      bool best_live = true;
      for (size_t r = 0; r < values.size() && values[r].first < mine && best_live; ++r) {
        best_live = values[r].second == i || !c.live[values[r].second];
      }
      double margin = c.Margin(i, at_cut);
      if (mine > cut + margin && !best_live) {
        c.Stop(i, "halving",
               fmt::format("rung at t={}: smoothed value {} is not in the best {} of {} trials (cut-off {}, "
                           "noise margin {})",
                           Secs(rung), Num(c.User(mine)), keep, values.size(), Num(c.User(cut)), Num(margin)),
               c.User(mine), c.User(cut), static_cast<int>(values.size()));
        break;
      }
    }
  }
}

void Median(Context& c) {
  const MedianRuleConfig& cfg = c.config.median;
  if (cfg.min_trials < 1) return;
  // The evident trials' latest times, latest first (ties by index): the same for every trial judged.
  std::vector<std::pair<double, size_t>> latest;
  for (size_t j = 0; j < c.series.size(); ++j) {
    if (c.Evident(j)) latest.emplace_back(c.series[j].last_t(), j);
  }
  std::sort(latest.begin(), latest.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  for (size_t i = 0; i < c.trials.size(); ++i) {
    if (!c.Candidate(i) || !c.Evident(i)) continue;
    const Series& me = c.series[i];
    // Compare at the latest time that enough other trials have reached: in a sweep where all
    // trials run at once, the trial that started first is always ahead, and comparing only at
    // its own latest time would never find rivals that got there, so it could never be stopped.
    // That is the min_trials-th latest time of the other evident trials.
    std::optional<double> reach;
    int seen = 0;
    for (const auto& [when, j] : latest) {
      if (j != i && ++seen == cfg.min_trials) {
        reach = when;
        break;
      }
    }
    if (!reach) continue;
    double at = std::min(me.last_t(), *reach);
    if (at < cfg.grace_s || at <= me.first_t()) continue;
    std::vector<double> others;
    double se = 0;  // the others' typical standard error (times its quantile)
    for (size_t j = 0; j < c.series.size(); ++j) {
      if (j != i && c.Evident(j) && c.series[j].Reached(at)) {
        others.push_back(c.series[j].RunningAverage(at));
        se += c.Se(j);
      }
    }
    if (static_cast<int>(others.size()) < cfg.min_trials) continue;
    se /= static_cast<double>(others.size());
    double mine = me.RunningAverage(at);
    double median = Quantile(others, cfg.quantile);
    double margin = std::hypot(c.Se(i), se);
    if (mine > median + margin) {
      c.Stop(i, "median",
             fmt::format("at t={}: running average of smoothed value {} worse than the {} {} of {} trials by more "
                         "than the noise margin {}",
                         Secs(at), Num(c.User(mine)),
                         cfg.quantile == 0.5 ? "median" : fmt::format("{}-quantile", cfg.quantile), Num(c.User(median)),
                         others.size(), Num(margin)),
             c.User(mine), c.User(median), static_cast<int>(others.size()));
    }
  }
}

void Patience(Context& c) {
  const PatienceRuleConfig& cfg = c.config.patience;
  for (size_t i = 0; i < c.trials.size(); ++i) {
    if (!c.Candidate(i) || !c.Evident(i)) continue;
    const Series& me = c.series[i];
    double now = me.last_t();
    double split = now - cfg.window_s;
    if (now < cfg.grace_s || split < me.first_t()) continue;
    double before = me.At(split), recent = kInf;
    for (size_t k = 0; k < me.t.size(); ++k) {
      if (me.t[k] <= split) before = std::min(before, me.s[k]);
      else recent = std::min(recent, me.s[k]);
    }
    // An improvement within the curve's own noise (a low point among noisy ones) is none.
    double delta = c.Margin(i, i, cfg.min_delta);
    if (recent > before - delta) {
      c.Stop(i, "patience",
             fmt::format("at t={}: best smoothed value in the last {} is {}, not better than {} by {} (min_delta, "
                         "or the curve's noise)",
                         Secs(now), Secs(cfg.window_s), Num(c.User(recent)), Num(c.User(before)), Num(delta)),
             c.User(recent), c.User(before - delta), 0);
    }
  }
}

// Groups of trials that differ only in throughput parameters: their loss per iteration is one
// curve, measured by whichever of them has gone furthest.
class ThroughputModel {
 public:
  explicit ThroughputModel(const Context& c) : c_(c) {
    const std::set<std::string> ignored(c.config.throughput.params.begin(), c.config.throughput.params.end());
    std::map<std::string, int> ids;
    for (size_t i = 0; i < c.trials.size(); ++i) {
      std::vector<std::pair<std::string, std::string>> kept;
      for (const auto& kv : c.trials[i].params) {
        if (!ignored.count(kv.first)) kept.push_back(kv);
      }
      std::sort(kept.begin(), kept.end());
      std::string key;
      for (const auto& [k, v] : kept) key += fmt::format("{}={};", k, v);
      int g = ids.emplace(key, static_cast<int>(ids.size())).first->second;
      group_.push_back(g);
      // A rate only from trials with the evidence to be compared (enough points, enough of the budget).
      rate_.push_back(c.Evident(i) ? c.series[i].Rate(std::max(2, c.config.throughput.min_points)) : std::nullopt);
      if (static_cast<size_t>(g) == members_.size()) {
        members_.emplace_back();
        min_step_.push_back(kInf);
        max_step_.push_back(-kInf);
      }
      const Series& s = c.series[i];
      if (s.empty()) continue;
      members_[g].push_back(i);
      min_step_[g] = std::min(min_step_[g], static_cast<double>(s.step.front()));
      max_step_[g] = std::max(max_step_[g], static_cast<double>(s.step.back()));
    }
  }

  int group(size_t i) const { return group_[i]; }
  std::optional<double> rate(size_t i) const { return rate_[i]; }

  // The group's smoothed loss at iteration n, averaged over the members that reached it.
  std::optional<double> Pooled(int g, double n) const {
    double sum = 0;
    int count = 0;
    for (size_t j : members_[g]) {
      const Series& s = c_.series[j];
      if (static_cast<double>(s.step.front()) > n || static_cast<double>(s.step.back()) < n) continue;
      sum += s.AtStep(n);
      ++count;
    }
    if (count == 0) return std::nullopt;
    return sum / count;
  }

  // Iteration trial i will be at when its axis time reaches `budget`, or was at if it has run past
  // it (then its own loss at the budget is measured, and it is judged on that, not on its later
  // and lower loss).
  std::optional<double> StepAt(size_t i, double budget) const {
    const Series& s = c_.series[i];
    if (!rate_[i]) return std::nullopt;
    if (budget < s.last_t()) return Lerp(s.t, s.step, budget);
    return static_cast<double>(s.step.back()) + *rate_[i] * (budget - s.last_t());
  }

  // How much less group a's loss has fallen than group b's, from the first iteration both
  // logged to the furthest both reached, and that iteration: progress per iteration. Levels are
  // not compared because first losses differ by initialisation and data order alone (up to 0.1
  // nats on bench/data), an offset that washes out in training.
  std::optional<std::pair<double, double>> GapPerIteration(int a, int b) const {
    auto [it, fresh] = gaps_.try_emplace({a, b});
    if (!fresh) return it->second;
    double first = std::max(min_step_[a], min_step_[b]), last = std::min(max_step_[a], max_step_[b]);
    if (!(last > first)) return std::nullopt;
    auto a0 = Pooled(a, first), b0 = Pooled(b, first), a1 = Pooled(a, last), b1 = Pooled(b, last);
    if (a0 && b0 && a1 && b1) it->second = std::pair{(*b0 - *b1) - (*a0 - *a1), last};
    return it->second;
  }

  // Loss trial i will at most have at the budget, given that loss falls with iterations: what it
  // has now, or its group's measured loss at the iteration it will reach, if measured.
  // Cached per trial: the rule asks it of each rival for each trial it judges, always at budget_s.
  double UpperBoundAtBudget(size_t i, double budget) const {
    if (budget == c_.config.budget_s) {
      if (upper_.empty()) upper_.resize(c_.trials.size());
      if (!upper_[i]) upper_[i] = ComputeUpperBoundAtBudget(i, budget);
      return *upper_[i];
    }
    return ComputeUpperBoundAtBudget(i, budget);
  }
  double ComputeUpperBoundAtBudget(size_t i, double budget) const {
    const Series& s = c_.series[i];
    double bound = s.s.back();
    if (s.last_t() >= budget) return s.At(budget);
    if (c_.trials[i].phase == TrialPhase::kCompleted) return bound;  // finished before the budget
    if (auto n = StepAt(i, budget)) {
      if (auto v = Pooled(group_[i], std::min(*n, max_step_[group_[i]]))) bound = std::min(bound, *v);
    }
    return bound;
  }

  // A lower bound for trial i's loss at the budget when its smoothed curve is in its convex
  // phase: the secant slope over the last third of its iterations, no steeper than over the
  // middle third (a warm-up plateau is concave and gets no bound), carried to the iteration the
  // trial will reach by the budget. nullopt before six points, outside the convex phase, or when
  // the budget lies further ahead (in iterations) than the curve has been observed.
  std::optional<double> ConvexLowerBound(size_t i, double budget) const {
    const Series& s = c_.series[i];
    size_t k = s.s.size();
    auto n = StepAt(i, budget);
    if (k < 6 || !n) return std::nullopt;
    size_t a = k / 3, b = 2 * k / 3;
    auto slope = [&](size_t from, size_t to) {
      return (s.s[to] - s.s[from]) / static_cast<double>(s.step[to] - s.step[from]);
    };
    if (s.step[b] <= s.step[a] || s.step[k - 1] <= s.step[b]) return std::nullopt;
    double earlier = slope(a, b), recent = slope(b, k - 1);
    if (recent > 0 || earlier > recent) return std::nullopt;
    // No further ahead than it has been observed: early curves bend more than once.
    double ahead = *n - static_cast<double>(s.step.back());
    if (ahead > static_cast<double>(s.step.back() - s.step.front())) return std::nullopt;
    return s.s.back() + recent * std::max(0.0, ahead);
  }

  // Loss trial i is expected to have at the budget, when its group has already been measured
  // that far (by a faster or earlier sibling); nullopt otherwise.
  std::optional<double> MeasuredAtBudget(size_t i, double budget) const {
    auto n = StepAt(i, budget);
    if (!n || *n > max_step_[group_[i]]) return std::nullopt;
    return Pooled(group_[i], *n);
  }

 private:
  const Context& c_;
  std::vector<int> group_;                    // per trial
  std::vector<std::optional<double>> rate_;   // per trial: iterations per axis second
  std::vector<std::vector<size_t>> members_;  // per group: trials with a curve
  std::vector<double> min_step_, max_step_;   // per group
  mutable std::map<std::pair<int, int>, std::optional<std::pair<double, double>>> gaps_;
  mutable std::vector<std::optional<double>> upper_;  // UpperBoundAtBudget at budget_s, per trial
};

// Rule (6) of the throughput rule (early_stop.h): the rival of trial i it is stopped for, if any.
struct Lead {
  size_t rival = 0;
  double at = 0, gap = 0, margin = 0, closing = 0, projected = 0;
};
// Whether curve `s`'s secant slope over [b, at] is steeper (more negative) than over [a, b] by more
// than `se` (one smoothed value's standard error, already times its quantile) explains: the slopes'
// difference weighs s(b) by 1/(b-a) + 1/(at-b), s(a) by 1/(b-a) and s(at) by 1/(at-b).
bool SteeperBeyondNoise(const Series& s, double se, double a, double b, double at) {
  double early = 1 / (b - a), late = 1 / (at - b);
  double steepening = (s.At(b) - s.At(a)) * early - (s.At(at) - s.At(b)) * late;
  double noise = se * std::sqrt((early + late) * (early + late) + early * early + late * late);
  return steepening > noise;
}

std::optional<Lead> LeadAtEqualTime(const Context& c, size_t i) {
  const Series& me = c.series[i];
  const double budget = c.config.budget_s;
  if (budget <= 0 || !c.LossEvident(i)) return std::nullopt;
  std::optional<Lead> best;
  for (size_t j = 0; j < c.trials.size(); ++j) {
    if (j == i || !c.live[j] || !c.LossEvident(j)) continue;
    const Series& them = c.series[j];
    double at = std::min({me.last_t(), them.last_t(), budget});
    double from = std::max(me.first_t(), them.first_t());
    if (!(at > from)) continue;
    double a = from + (at - from) / 3, b = from + 2 * (at - from) / 3;
    // Both at the budget: the objective itself is measured, and the gap there decides; nothing is
    // left to project, so neither the bend nor the closing pace matters.
    bool at_budget = at >= budget;
    // Bent: its recent slope in time no steeper than the one before, beyond what its noise explains.
    // The difference of the two secant slopes, (s(b) - s(a)) / (b - a) - (s(at) - s(b)) / (at - b),
    // carries the noise of three smoothed values; compared without it, a flat noisy curve looks
    // steepening half the time, and the rule waited on it (issue 30). A real steepening (a warm-up,
    // a cosine decay's late descent) is larger than that and still holds the rule back.
    if (!at_budget && SteeperBeyondNoise(me, c.Se(i), a, b, at)) continue;
    double gap = me.At(at) - them.At(at);
    double m = c.Margin(i, j, c.config.throughput.margin);
    if (gap <= m) continue;
    if (at_budget) {
      if (!best || gap > best->projected) best = Lead{j, at, gap, m, 0, gap};
      continue;
    }
    double closing =
        std::max(0.0, (me.At(b) - them.At(b)) - gap + std::sqrt(2.0) * std::hypot(c.Se(i), c.Se(j))) / (at - b);
    double projected = gap - closing * (budget - at);
    if (projected > m && (!best || projected > best->projected)) best = Lead{j, at, gap, m, closing, projected};
  }
  return best;
}

void StopForLead(Context& c, size_t i) {
  if (!c.config.throughput.lead) return;
  if (auto lead = LeadAtEqualTime(c, i)) {
    std::string reason =
        lead->at >= c.config.budget_s
            ? fmt::format("at the budget t={}: trial {} is lower by {} (margin {})", Secs(lead->at),
                          Name(c.trials[lead->rival]), Num(lead->gap), Num(lead->margin))
            : fmt::format(
                  "at t={}: trial {} is lower by {} at equal time (margin {}) and the gap, closing at most "
                  "{} per second, is still {} at the budget",
                  Secs(lead->at), Name(c.trials[lead->rival]), Num(lead->gap), Num(lead->margin), Num(lead->closing),
                  Num(lead->projected));
    c.Stop(i, "throughput", std::move(reason), lead->gap, lead->margin, 1);
  }
}

void Throughput(Context& c) {
  const ThroughputRuleConfig& cfg = c.config.throughput;
  ThroughputModel model(c);
  // Slowest first, so that a chain of siblings collapses onto the fastest one.
  std::vector<size_t> order;
  for (size_t i = 0; i < c.trials.size(); ++i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return model.rate(a).value_or(kInf) < model.rate(b).value_or(kInf); });
  for (size_t i : order) {
    if (!c.Candidate(i) || c.series[i].last_t() < cfg.grace_s) continue;
    if (!model.rate(i)) {
      StopForLead(c, i);  // (6) needs no rate
      continue;
    }
    const Series& me = c.series[i];
    double mine = *model.rate(i);
    // A live sibling that is clearly faster reaches more iterations of the same curve in any time:
    // faster by rate_margin plus noise_z standard errors of the two rates (a trial whose stalls
    // have shown spreads its per-interval rates, and a rival measured over a short window is
    // not trusted at all: see Evident).
    std::optional<size_t> rival;
    double needed = 0;
    for (size_t j = 0; j < c.trials.size(); ++j) {
      if (j == i || !c.live[j] || model.group(j) != model.group(i) || !model.rate(j)) continue;
      double need = 1 + cfg.rate_margin + std::hypot(c.RateSe(i), c.RateSe(j));
      if (*model.rate(j) >= mine * need && (!rival || *model.rate(j) > *model.rate(*rival))) rival = j, needed = need;
    }
    if (rival) {
      double theirs = *model.rate(*rival);
      c.Stop(i, "throughput",
             fmt::format("at t={}: trial {} differs only in throughput parameters and runs {:.2f}x the "
                         "iterations per second ({} vs {} it/s; needed {:.3f}x with the rates' noise)",
                         Secs(me.last_t()), Name(c.trials[*rival]), theirs / mine, Num(theirs), Num(mine), needed),
             mine, theirs, 1);
      continue;
    }
    // Another configuration is only ever a reason to stop this one when it is lower *now, at
    // equal time*, by more than the two curves' noise: progress per iteration and projections
    // to the budget say how far ahead it will stay, not that it is ahead (a faster trial of
    // another model can descend less per iteration and end higher).
    // Equal time: the later of the two curves' ends is cut to the earlier one's.
    auto lower_now = [&](size_t j, double floor) -> std::optional<double> {
      const Series& them = c.series[j];
      if (!c.Evident(j)) return std::nullopt;
      double at = std::min(me.last_t(), them.last_t());
      if (!me.Reached(at) || !them.Reached(at)) return std::nullopt;
      double m = c.Margin(i, j, floor);
      if (them.At(at) < me.At(at) - m) return m;
      return std::nullopt;
    };
    // Another group's trial, compared on progress per iteration (how much the loss fell since
    // the first iteration both logged; see GapPerIteration) and on speed. One that is much faster
    // and has progressed no worse, or is no slower and has progressed clearly better, is expected
    // to end lower: the iterations this trial lacks, or its deficit per iteration, would have to
    // reverse by more than the margin before the budget.
    std::optional<size_t> rival_group;
    std::pair<double, double> gap;
    double gap_margin = 0;
    for (size_t j = 0; j < c.trials.size(); ++j) {
      if (j == i || !c.live[j] || model.group(j) == model.group(i) || !model.rate(j)) continue;
      double speedup = *model.rate(j) / mine;
      if (speedup < 1) continue;
      auto g = model.GapPerIteration(model.group(i), model.group(j));
      if (!g) continue;
      auto m = lower_now(j, cfg.margin);
      if (!m) continue;
      // Progress is a difference of differences: its first values are single raw points (the
      // smoothing has nothing to average yet), so its noise is the raw noise of both curves at
      // the start plus the smoothed noise at the end.
      double progress_margin = std::max(cfg.margin, std::sqrt(c.Noise(i) * c.Noise(i) + c.Noise(j) * c.Noise(j) +
                                                              c.Se(i) * c.Se(i) + c.Se(j) * c.Se(j)));
      bool much_faster = cfg.rival_speedup > 0 && speedup >= cfg.rival_speedup && g->first >= -progress_margin;
      bool better = g->first > progress_margin;
      if ((much_faster || better) && (!rival_group || *model.rate(j) > *model.rate(*rival_group))) {
        rival_group = j, gap = *g, gap_margin = *m;
      }
    }
    if (rival_group) {
      double theirs = *model.rate(*rival_group);
      c.Stop(i, "throughput",
             fmt::format("at t={}: trial {} is lower by more than the margin {} at equal time, runs {:.2f}x the "
                         "iterations per second ({} vs {} it/s) and improved {:.4g} more by iteration {:.0f}",
                         Secs(me.last_t()), Name(c.trials[*rival_group]), Num(gap_margin), theirs / mine, Num(theirs),
                         Num(mine), gap.first, gap.second),
             gap.first, gap.first > gap_margin ? gap_margin : -gap_margin, 1);
      continue;
    }
    // Across groups: only with a measured prediction for this trial, against the upper bounds of
    // rivals that are lower at equal time already.
    if (c.config.budget_s <= 0) continue;
    std::optional<size_t> best;
    double best_bound = kInf, best_margin = 0;
    for (size_t j = 0; j < c.trials.size(); ++j) {
      if (j == i || !c.live[j] || c.series[j].empty()) continue;
      auto m = lower_now(j, cfg.margin);
      if (!m) continue;
      double bound = model.UpperBoundAtBudget(j, c.config.budget_s);
      if (bound + *m < best_bound + best_margin || !best) best_bound = bound, best_margin = *m, best = j;
    }
    if (!best) continue;
    if (auto predicted = model.MeasuredAtBudget(i, c.config.budget_s);
        predicted && *predicted > best_bound + best_margin) {
      c.Stop(i, "throughput",
             fmt::format("at t={}: predicted value at the budget {} (its group's at iteration {:.0f}) is worse than "
                         "{} that trial {}, already better at equal time, will at most have, by more than {}",
                         Secs(me.last_t()), Num(c.User(*predicted)), *model.StepAt(i, c.config.budget_s),
                         Num(c.User(best_bound)), Name(c.trials[*best]), Num(best_margin)),
             c.User(*predicted), c.User(best_bound), 1);
      continue;
    }
    // (5) Its own descent continued in a straight line to the budget: once a curve bends (its
    // recent slope per iteration no steeper than the one before), a loss that is convex in the
    // iteration lies above that line, so the line is a lower bound for the loss at the budget.
    if (cfg.extrapolate) {
      if (auto bound = model.ConvexLowerBound(i, c.config.budget_s); bound && *bound > best_bound + best_margin) {
        c.Stop(i, "throughput",
               fmt::format("at t={}: even its recent descent continued in a straight line to iteration {:.0f} "
                           "ends at {}, worse than {} that trial {}, already better at equal time, will at most have "
                           "at the budget, by more than {}",
                           Secs(me.last_t()), *model.StepAt(i, c.config.budget_s), Num(c.User(*bound)),
                           Num(c.User(best_bound)), Name(c.trials[*best]), Num(best_margin)),
               c.User(*bound), c.User(best_bound), 1);
        continue;
      }
    }
    // (6) A rival lower at equal time that this trial is not catching up with fast enough: its
    // own curve has bent (so it will not suddenly descend faster), and the gap, closing at most
    // at its recent rate (plus the noise of that rate), is still above the margin at the budget.
    StopForLead(c, i);
  }
}

}  // namespace

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
                                 std::vector<const Series*> series) {
  Context c{config, trials, {std::move(series)}, {}, std::vector<bool>(trials.size(), false), {}};
  for (size_t i = 0; i < trials.size(); ++i) {
    c.live.push_back(trials[i].phase != TrialPhase::kStopped);
    c.stall_period = std::max(c.stall_period, c.series[i].stall_period);
  }
  StudentT t(config.evidence.noise_z);
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
  if (config.median.enabled) Median(c);
  if (config.patience.enabled) Patience(c);
  // Last, so that the rivals it stops trials for are known to live on.
  if (config.throughput.enabled) Throughput(c);
  std::map<int64_t, size_t> position;
  for (size_t i = 0; i < trials.size(); ++i) position.emplace(trials[i].id, i);
  std::stable_sort(c.decisions.begin(), c.decisions.end(), [&](const StopDecision& a, const StopDecision& b) {
    return position[a.trial_id] < position[b.trial_id];
  });
  return std::move(c.decisions);
}

}  // namespace

std::vector<StopDecision> EvaluateStopping(const StoppingConfig& config, const std::vector<TrialProgress>& trials) {
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
  return Decide(config, trials, std::move(series));
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

std::vector<StopDecision> StoppingState::Evaluate(const std::vector<TrialProgress>& trials) {
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
  return Decide(config_, trials, std::move(series));
}

std::optional<StoppingState::View> StoppingState::Inspect(int64_t trial_id) {
  auto it = series_.find(trial_id);
  if (it == series_.end()) return std::nullopt;
  Series& s = *it->second;
  s.Refresh();
  return View{s.t,
              s.step,
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
              s.first_nonfinite.has_value()};
}

size_t StoppingState::MemoryBytes() const {
  size_t bytes = 0;
  for (const auto& [id, s] : series_) bytes += sizeof(Series) + s->MemoryBytes();
  return bytes;
}

}  // namespace sweep
