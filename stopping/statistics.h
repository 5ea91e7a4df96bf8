// Statistics the stopping rules share: piecewise-linear curve lookups, medians and quantiles, a
// curve's noise from its second differences, what smoothing leaves of it, Student-t margins, and
// iteration-rate spread and stalls. Internal to stopping/ (the module's face is early_stop.h).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <vector>

#include "base/stopping_settings.h"

namespace sweep::stopping {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Curves

// One trial's finite loss points on the rules' time axis, smoothed.
// y at x on the piecewise-linear curve through (xs[k], ys[k]), xs ascending; clamped to the ends.
// std::upper_bound(xs, x) (the first element above x) for xs ascending, found by starting where x
// would be were the xs evenly spaced (knots of a curve logged at a steady pace nearly are) and
// walking from there; a binary search when that guess is far off. The rules look up every trial's
// curve at many times per tick, and a binary search over 1024 knots misses the cache at each step.
// (xs: a std::vector, or Series' StepColumn: anything with size() and operator[].)
template <class Xs>
size_t UpperBound(const Xs& xs, double x) {
  // std::upper_bound's halving, on indices.
  auto search = [&xs, x] {
    size_t first = 0, count = xs.size();
    while (count > 0) {
      size_t half = count / 2;
      if (x < static_cast<double>(xs[first + half])) {
        count = half;
      } else {
        first += half + 1;
        count -= half + 1;
      }
    }
    return first;
  };
  size_t n = xs.size();
  double lo = static_cast<double>(xs[0]), span = static_cast<double>(xs[n - 1]) - lo;
  if (n < 16 || !(span > 0) || x < lo || x >= static_cast<double>(xs[n - 1])) return search();
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
  return search();
}

template <class Xs, class Ys>
double Lerp(const Xs& xs, const Ys& ys, double x) {
  if (x <= static_cast<double>(xs[0])) return static_cast<double>(ys[0]);
  if (x >= static_cast<double>(xs[xs.size() - 1])) return static_cast<double>(ys[ys.size() - 1]);
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
    const size_t bin = Bin(v);
    ++total_;
    if (bin == 0) {
      ++zeros_;
      return;
    }
    // Only the log bins from the lowest to the highest used are held (a loss's second differences
    // span a few decades: a few hundred bins of the 1,280, about 1 KB instead of 5; issue 42's
    // 10,000 curves hold two each).
    // Grown to what is needed and a few bins more, not doubled: a curve's extremes come rarely.
    constexpr size_t kSpare = 8;
    if (counts_.empty()) {
      lo_ = bin;
      counts_.reserve(kSpare);
      counts_.push_back(0);
    } else if (bin < lo_) {
      std::vector<uint32_t> grown;
      grown.reserve(lo_ - bin + counts_.size() + kSpare);
      grown.assign(lo_ - bin, 0);
      grown.insert(grown.end(), counts_.begin(), counts_.end());
      counts_.swap(grown);
      lo_ = bin;
    } else if (bin >= lo_ + counts_.size()) {
      if (bin - lo_ + 1 > counts_.capacity()) counts_.reserve(bin - lo_ + 1 + kSpare);
      counts_.resize(bin - lo_ + 1, 0);
    }
    ++counts_[bin - lo_];
  }
  // Frees what the bins' growth reserved.
  void Compact() { counts_.shrink_to_fit(); }
  bool empty() const { return total_ == 0; }
  size_t MemoryBytes() const { return counts_.capacity() * sizeof(uint32_t); }
  // The value of rank total / 2 (the upper median, as MedianOf).
  double Median() const {
    uint64_t rank = total_ / 2, seen = zeros_;
    if (seen > rank) return 0;  // and when there is nothing
    for (size_t k = 0; k < counts_.size(); ++k) {
      seen += counts_[k];
      if (seen > rank) return std::exp2(kMinOctave + (static_cast<double>(lo_ + k - 1) + 0.5) / kBinsPerOctave);
    }
    return 0;
  }
  // The bin of a value: kBins + 1 of them (zero's, then the log bins).
  static constexpr int kBinsPerOctave = 16, kMinOctave = -48, kMaxOctave = 32;
  static constexpr size_t kBins = static_cast<size_t>((kMaxOctave - kMinOctave) * kBinsPerOctave);
  static size_t Bin(double v) {
    if (!(v > 0)) return 0;
    double x = (std::log2(v) - kMinOctave) * kBinsPerOctave;
    if (x < 0) return 1;
    if (x >= static_cast<double>(kBins)) return kBins;
    return 1 + static_cast<size_t>(x);
  }

 private:
  std::vector<uint32_t> counts_;  // of the log bins lo_, lo_ + 1, ...
  size_t lo_ = 1;
  uint64_t zeros_ = 0, total_ = 0;
};

double MedianOf(std::vector<double> v);

// The q-quantile of `v` (linear between order statistics); v non-empty.
double Quantile(std::vector<double> v, double q);

constexpr double kNoiseFromMad = 1.4826;

// Standard deviation of a curve's raw points about its trend, from the median absolute second
// difference (a smooth trend's second differences are small; white noise's have variance 6
// sigma^2), so a few steep early points or spikes do not inflate it.
double NoiseSigma(std::vector<double> abs_d2);
// The same from that median.
inline double NoiseFromMedian(double median_abs_d2) { return kNoiseFromMad * median_abs_d2 / std::sqrt(6.0); }

// What smoothing leaves of white noise of unit deviation, after n points.
double SmoothedFraction(const Smoothing& smoothing, size_t n);

// noise_z read as a Student-t quantile with `df` degrees of freedom: the quantile whose one-sided
// probability is the normal's at noise_z (EvidenceConfig). Memoised per evaluation: boost's inverse
// takes microseconds, and the rules ask it for every pair of trials. Past 1000 degrees of freedom
// it is within 0.1% of noise_z.
class StudentT {
 public:
  explicit StudentT(double z) : z_(z) {}
  double operator()(size_t points_minus_one);

 private:
  double z_;
  std::map<size_t, double> memo_;
};

// Seconds per iteration of each interval whose step advances.
std::vector<double> PerInterval(const std::vector<double>& t, const std::vector<int64_t>& step);

// Relative standard error of a curve's mean iteration rate: the spread of its per-interval
// seconds per iteration over the mean, over the square root of the intervals.
double RateRse(const std::vector<double>& per);

// Iterations between a curve's stalls (checkpoints, evaluation, data-loader refills: intervals
// taking over 3x the median time per iteration), the longest gap seen; with one stall, the
// iterations before it. 0 when none has shown. Such stalls come every so many iterations, so a
// rate is trusted only over a window of twice the longest period any trial of the study shows.
int64_t StallPeriod(const std::vector<double>& t, const std::vector<int64_t>& step, const std::vector<double>& per);

}  // namespace sweep::stopping
