// A trial's series for the stopping rules; see series.h.
#include "stopping/series.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>

namespace sweep::stopping {

void Series::AppendLoss(const CurvePoint& p) {
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
  // While every point is kept, a mark can be taken later from d2_ alone (SettleMarks, when first read:
  // all at once after a restart's thousands of points); past that, it is the histogram's of now.
  if (!exact_ && MarkPoints(marks_.size()) == points) marks_.push_back(static_cast<float>(NoiseNow()));
}

// NoiseNow as it was when the curve had its first `m` points, from d2_ (exact only): the noise of the
// first m - 2 second differences, the larger of all of them and of the last third of them.
double Series::ExactNoiseOf(size_t m, double whole_median) const {
  size_t d = m > 2 ? m - 2 : 0;
  double whole = NoiseFromMedian(whole_median);
  size_t k = std::min(std::min(d, kRecent), std::max<size_t>(3, std::min(kRecent, d / 3)));
  if (k < 3) return whole;
  return std::max(whole, NoiseSigma(std::vector<double>(d2_.begin() + static_cast<std::ptrdiff_t>(d - k),
                                                        d2_.begin() + static_cast<std::ptrdiff_t>(d))));
}

void Series::SettleMarks() const {
  if (!exact_ || MarkPoints(marks_.size()) > points) return;
  size_t due = 0;
  while (MarkPoints(marks_.size() + due) <= points) ++due;
  if (due <= 2) {
    // A tick's few new points: each mark's median directly.
    for (; due > 0; --due) {
      size_t m = MarkPoints(marks_.size());
      size_t d = m > 2 ? m - 2 : 0;
      double median = MedianOf(std::vector<double>(d2_.begin(), d2_.begin() + static_cast<std::ptrdiff_t>(d)));
      marks_.push_back(static_cast<float>(ExactNoiseOf(m, median)));
    }
    return;
  }
  // Many (a curve read whole after a restart): the median of every prefix of the second differences in
  // one pass, the smaller half in a max-heap and the rest in a min-heap whose top is MedianOf's element
  // (rank size / 2), instead of a selection over each prefix (most of a restart's time at 10,000 trials).
  std::priority_queue<double> lower;
  std::priority_queue<double, std::vector<double>, std::greater<double>> upper;
  size_t used = 0;
  for (; due > 0; --due) {
    size_t m = MarkPoints(marks_.size());
    size_t d = m > 2 ? m - 2 : 0;
    for (; used < d; ++used) {
      double x = d2_[used];
      if (!lower.empty() && x < lower.top()) lower.push(x);
      else upper.push(x);
      size_t target = (used + 1) / 2;
      while (lower.size() > target) upper.push(lower.top()), lower.pop();
      while (lower.size() < target) lower.push(upper.top()), upper.pop();
    }
    marks_.push_back(static_cast<float>(ExactNoiseOf(m, d == 0 ? 0 : upper.top())));
  }
}

// A mark at every point up to 32, then 16 between n and 2n for n a power of two (every n / 16 points).
size_t Series::MarkPoints(size_t k) {
  if (k < 31) return k + 1;
  size_t octave = 5 + (k - 31) / 16;
  return (size_t{1} << octave) + ((k - 31) % 16) * (size_t{1} << (octave - 4));
}

std::pair<double, size_t> Series::NoiseAt(double at) const {
  if (empty() || at >= last_t()) return {noise, points};
  SettleMarks();
  // Knot j is point j * stride_ (0-based), so at least (hi - 1) * stride_ + 1 points lie at or before `at`.
  size_t hi = std::max<size_t>(1, UpperBound(t, at));
  size_t n = (hi - 1) * static_cast<size_t>(stride_) + 1;
  // The first mark of at least n points (marks are few: a linear walk from the estimate would do, but
  // a binary search over their point counts is as short).
  size_t lo = 0, up = marks_.size();
  while (lo < up) {
    size_t mid = (lo + up) / 2;
    if (MarkPoints(mid) < n) lo = mid + 1;
    else up = mid;
  }
  if (lo == marks_.size()) return {noise, points};
  return {marks_[lo], MarkPoints(lo)};
}

// Appends point number `points` (0-based) as a knot or as the tail, then thins the knots.
void Series::Push(double at, int64_t n, double smoothed, double area) {
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
void Series::LeaveExact() {
  // The marks of the exact points first: they are read from d2_, dropped here.
  --points;  // the point that left exact is not one of them
  SettleMarks();
  ++points;
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

void Series::Refresh() {
  if (!dirty_) return;
  dirty_ = false;
  noise = NoiseNow();
  if (exact_) {
    std::vector<double> per = PerInterval(t, step);
    rate_rse = RateRse(per);
    stall_period = StallPeriod(t, step, per);
  } else {
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
  se = noise * SmoothedFraction(smoothing, points);
}

double Series::NoiseNow() const {
  double whole = exact_ ? NoiseSigma(d2_) : kNoiseFromMad * d2_hist_.Median() / std::sqrt(6.0);
  // The recent noise: the last third of the second differences (at least 3, at most kRecent).
  size_t k = std::min(recent_.size(), std::max<size_t>(3, std::min(kRecent, d2_count_ / 3)));
  if (k < 3) return whole;
  std::vector<double> last;
  last.reserve(k);
  for (size_t m = 0; m < k; ++m) last.push_back(recent_[(recent_next_ + kRecent - 1 - m) % kRecent]);
  return std::max(whole, NoiseSigma(std::move(last)));
}

}  // namespace sweep::stopping
