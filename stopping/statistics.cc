// Statistics the stopping rules share; see statistics.h.
#include "stopping/statistics.h"

#include <boost/math/distributions/students_t.hpp>

namespace sweep::stopping {

double MedianOf(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

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

double NoiseSigma(std::vector<double> abs_d2) { return NoiseFromMedian(MedianOf(std::move(abs_d2))); }

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

double StudentT::operator()(size_t points_minus_one) {
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

std::vector<double> PerInterval(const std::vector<double>& t, const std::vector<int64_t>& step) {
  std::vector<double> per;
  for (size_t k = 1; k < t.size(); ++k) {
    if (step[k] > step[k - 1]) per.push_back((t[k] - t[k - 1]) / static_cast<double>(step[k] - step[k - 1]));
  }
  return per;
}

double RateRse(const std::vector<double>& per) {
  if (per.size() < 2) return kInf;
  double mean = 0, var = 0;
  for (double v : per) mean += v / static_cast<double>(per.size());
  for (double v : per) var += (v - mean) * (v - mean) / static_cast<double>(per.size() - 1);
  return mean > 0 ? std::sqrt(var / static_cast<double>(per.size())) / mean : kInf;
}

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

}  // namespace sweep::stopping
