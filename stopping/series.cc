// A trial's series for the stopping rules; see series.h.
#include "stopping/series.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace sweep::stopping {

void RunningMedian::Add(double v) {
  pending_.push_back(v);
  ++count_;
  if (pending_.size() >= kPending) Flush();
}

double RunningMedian::Median() const {
  if (count_ == 0) return 0;
  Flush();
  return sorted_[std::min(count_ / 2 - below_, sorted_.size() - 1)];  // past last: not exact, in range
}

void RunningMedian::Flush() const {
  if (pending_.empty()) return;
  // Merged from the back into the sorted kept values.
  std::sort(pending_.begin(), pending_.end());
  size_t i = sorted_.size(), j = pending_.size();
  sorted_.resize(i + j);
  for (size_t k = sorted_.size(); j > 0;) {
    // Without a branch on the comparison (a coin toss for noise).
    bool old = i > 0 && sorted_[i - 1] > pending_[j - 1];
    sorted_[--k] = old ? sorted_[i - 1] : pending_[j - 1];
    i -= old ? 1 : 0;
    j -= old ? 0 : 1;
  }
  pending_.clear();
  if (count_ > last_) return;  // read no more
  // The kept values of rank below `floor` (at most their index and below_) cannot be the median again;
  // nor those above it of rank above half (every dropped one is below the median, so their rank is
  // their index and below_).
  size_t half = last_ / 2, floor = count_ + half > last_ ? count_ + half - last_ : 0;
  if (floor > below_) {
    sorted_.erase(sorted_.begin(), sorted_.begin() + static_cast<std::ptrdiff_t>(floor - below_));
    below_ = floor;
  }
  if (sorted_.size() > half + 1 - below_) sorted_.resize(half + 1 - below_);
  if (sorted_.capacity() > 2 * sorted_.size() + 16) sorted_.shrink_to_fit();
}

void RunningMedian::Build(std::vector<double> values) {
  count_ = values.size(), below_ = 0;
  size_t half = last_ / 2, floor = count_ + half > last_ && count_ <= last_ ? count_ + half - last_ : 0;
  // Only ranks [floor, half] (those that can still be the median) are sorted.
  auto at = [&values](size_t k) { return values.begin() + static_cast<std::ptrdiff_t>(k); };
  if (floor > 0) std::nth_element(values.begin(), at(floor), values.end());
  values.erase(values.begin(), at(floor));
  below_ = floor;
  size_t keep = half + 1 - floor;
  if (count_ <= last_ && values.size() > keep) {
    std::nth_element(values.begin(), at(keep), values.end());
    values.resize(keep);
  }
  std::sort(values.begin(), values.end());
  sorted_ = std::move(values);
  sorted_.shrink_to_fit();
  pending_.clear();
}

void StepColumn::push_back(int64_t n) {
  if (!wide_) {
    if (narrow_.empty()) base_ = n;
    // n - base_ within int32_t, found without overflowing int64_t.
    uint64_t un = static_cast<uint64_t>(n), ub = static_cast<uint64_t>(base_);
    if (n >= base_ ? un - ub <= uint64_t{INT32_MAX} : ub - un <= uint64_t{1} << 31) {
      narrow_.push_back(static_cast<int32_t>(n - base_));
      return;
    }
    wides_ = ToVector();
    std::vector<int32_t>().swap(narrow_);
    wide_ = true;
  }
  wides_.push_back(n);
}

std::vector<int64_t> StepColumn::ToVector() const {
  if (wide_) return wides_;
  std::vector<int64_t> out;
  out.reserve(narrow_.size());
  for (int32_t d : narrow_) out.push_back(base_ + d);
  return out;
}

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
    if (exact_) {
      d2_median_.Add(d2);
    }
    d2_hist_.Add(d2);  // read once the curve leaves exact; counted from the first point
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
    // PerInterval's value for this interval (while exact every point is a knot).
    if (exact_ && p.step > last_step_ && per_built_) {
      per_median_.Add((at - last_at_) / static_cast<double>(p.step - last_step_));
    }
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
  // Taken now: the second differences of the first points are not kept (a running median's values
  // only). While exact this is ExactNoise of the first `points` points: the median of their second
  // differences, at most a selection over kRecent of them.
  if (MarkPoints(marks_.size()) == points) marks_.push_back(static_cast<float>(NoiseNow()));
}

// A mark at every point up to 32, then 16 between n and 2n for n a power of two (every n / 16 points).
size_t Series::MarkPoints(size_t k) {
  if (k < 31) return k + 1;
  size_t octave = 5 + (k - 31) / 16;
  return (size_t{1} << octave) + ((k - 31) % 16) * (size_t{1} << (octave - 4));
}

std::pair<double, size_t> Series::NoiseAt(double at) const {
  if (empty() || at >= last_t()) return {noise, points};
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
  // Room for every knot and the tail, taken once a curve is half that long: growing by doubling,
  // the 1,025th point would take room for 2,048 (issue 42: 10,000 curves past 1,024 points).
  if (t.size() == t.capacity() && t.size() >= kMaxKnots / 2) {
    for (auto* v : {&t, &s, &area_to}) v->reserve(kMaxKnots + 2);
    step.reserve(kMaxKnots + 2);
  }
  t.push_back(at), step.push_back(n), s.push_back(smoothed), area_to.push_back(area);
  tail_ = points % static_cast<size_t>(stride_) != 0;
  size_t knots = t.size() - (tail_ ? 1 : 0);
  if (knots <= kMaxKnots) return;
  // Every other knot goes (knot j is point j * stride); the latest point stays as the tail. In place:
  // knot j moves to j / 2 <= j, after what was there has moved.
  size_t kept = 0;
  for (size_t j = 0; j < t.size(); ++j) {
    if (j % 2 != 0 && j + 1 != t.size()) continue;
    t[kept] = t[j], step.Set(kept, step[j]), s[kept] = s[j], area_to[kept] = area_to[j];
    ++kept;
  }
  t.resize(kept), step.Truncate(kept), s.resize(kept), area_to.resize(kept);
  stride_ *= 2;
  tail_ = points % static_cast<size_t>(stride_) != 0;
}

// From here on the statistics are kept in bounded memory (see the struct's comment); they start
// from every exact point, so the result does not depend on when the switch happened.
void Series::LeaveExact() {
  exact_ = false;
  d2_hist_.Compact();
  d2_median_.Release(), per_median_.Release();
  std::vector<double> per = PerInterval(t, step.ToVector());
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
  per_hist_.Compact();
}

void Series::Refresh() {
  if (!dirty_) return;
  dirty_ = false;
  noise = NoiseNow();
  if (exact_) {
    RefreshRateExact();
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
  d2_median_.Trim(), per_median_.Trim();
}

// RateRse and StallPeriod of PerInterval(t, step), as they compute them (the same operations in the
// same order), with the median per iteration kept by per_median_ instead of a selection over them all.
void Series::RefreshRateExact() {
  thread_local std::vector<double> per;
  per.clear();
  for (size_t k = 1; k < t.size(); ++k) {
    if (step[k] > step[k - 1]) per.push_back((t[k] - t[k - 1]) / static_cast<double>(step[k] - step[k - 1]));
  }
  rate_rse = RateRse(per);
  // Built from them at the first refresh, not point by point: a restart appends thousands of points a
  // trial and refreshes once.
  if (!per_built_) per_median_.Build(per), per_built_ = true;
  stall_period = 0;
  if (per.size() < 3) return;
  double typical = per_median_.Median();
  int64_t last = step.front();
  size_t k = 0;
  for (size_t j = 1; j < t.size(); ++j) {
    if (step[j] <= step[j - 1]) continue;
    if (per[k++] > 3 * typical) {
      stall_period = std::max<int64_t>(stall_period, step[j] - last);
      last = step[j];
    }
  }
}

double Series::NoiseNow() const {
  double whole = exact_ ? d2_median_.Median() : d2_hist_.Median();
  // The recent noise: the last third of the second differences (at least 3, at most kRecent); the
  // larger. NoiseFromMedian is monotone, so the larger of the two noises is that of the larger median,
  // and the recent median (rank k / 2) is at most the whole curve's when k / 2 + 1 of them are: only
  // those above it are copied, and selected among when fewer are at most it.
  size_t k = std::min(recent_.size(), std::max<size_t>(3, std::min(kRecent, d2_count_ / 3)));
  if (k < 3) return NoiseFromMedian(whole);
  thread_local std::vector<double> above(kRecent);
  size_t n = 0;
  for (size_t m = 0; m < k; ++m) {
    double d = recent_[(recent_next_ + kRecent - 1 - m) % kRecent];
    above[n] = d;
    n += d > whole ? 1 : 0;  // without a branch: half of them are above, at random
  }
  size_t at_most = k - n;
  if (at_most >= k / 2 + 1) return NoiseFromMedian(whole);
  // The recent median is the (k / 2 - at_most)-th smallest of those above.
  auto nth = above.begin() + static_cast<std::ptrdiff_t>(k / 2 - at_most);
  std::nth_element(above.begin(), nth, above.begin() + static_cast<std::ptrdiff_t>(n));
  return std::max(NoiseFromMedian(whole), NoiseFromMedian(*nth));
}

}  // namespace sweep::stopping
