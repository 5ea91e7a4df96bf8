// The median rule (rules.cc) with the others' running averages read in one sweep: the trials judged are
// taken in the order of the time they are judged at, and each curve keeps the segment of knots that time
// falls in, so a pair costs a few multiplications from a small array instead of a search in a curve of up
// to 1024 knots that lies elsewhere in memory (at 10,000 trials the search was most of a tick). Decides as
// Median does, bit for bit: the same arithmetic on the same knots (Series::RunningAverage), the others
// summed in the same order.
// Most trials stay, and to know that it is enough to know that at most the quantile's rank of the others
// lie below the trial's running average minus its own standard error (the margin is at least that). So the
// trials judged are taken in batches of nearby times; for each batch every curve that spans it gets a
// lower bound of its running average over the batch's times (from its knots there), sorted once; a trial
// judged counts the others possibly below by binary search, the curves that start or end within the
// batch exactly, and is decided in full, as before, only when that count does not settle it (issue 42:
// the pairs were most of the rule's time at 10,000 trials).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "stopping/rules.h"

namespace sweep::stopping {
namespace {

// Per curve, what the running average reads, side by side in small arrays, and the knots around the
// time of the sweep: hi is the first knot after it (UpperBound).
struct Segments {
  std::vector<size_t> hi, knots;
  std::vector<double> first_t, last_t, s_first, s_last, se;
  std::vector<double> t_lo, t_hi, s_lo, s_hi, area_lo;  // t_hi: +inf past the last knot

  explicit Segments(const Context& c) {
    size_t n = c.series.size();
    hi.assign(n, 0), knots.assign(n, 0);
    for (auto* v : {&first_t, &last_t, &s_first, &s_last, &se, &t_lo, &s_lo, &s_hi, &area_lo}) v->assign(n, 0);
    t_hi.assign(n, -kInf);
    for (size_t j = 0; j < n; ++j) {
      const Series& s = c.series[j];
      if (s.empty()) continue;
      knots[j] = s.t.size();
      first_t[j] = s.first_t(), last_t[j] = s.last_t(), s_first[j] = s.s.front(), s_last[j] = s.s.back();
      se[j] = c.Se(j);
    }
  }

  bool Reached(size_t j, double at) const { return first_t[j] <= at && last_t[j] >= at; }

  // Moves curve j's segment to the one holding `at` (at never decreases between calls).
  void Advance(const Series& s, size_t j, double at) {
    if (at < t_hi[j]) return;
    size_t k = hi[j];
    while (k < knots[j] && s.t[k] <= at) ++k;
    hi[j] = k;
    size_t lo = k > 0 ? k - 1 : 0;
    t_lo[j] = s.t[lo], s_lo[j] = s.s[lo], area_lo[j] = s.area_to[lo];
    if (k < knots[j]) t_hi[j] = s.t[k], s_hi[j] = s.s[k];
    else t_hi[j] = kInf, s_hi[j] = s_last[j];
  }

  // Series::RunningAverage(at) for `at` within curve j (Reached), from the segment.
  double RunningAverage(size_t j, double at) const {
    if (at <= first_t[j]) return s_first[j];
    double here = s_last[j];
    if (hi[j] < knots[j]) {
      double span = t_hi[j] - t_lo[j];
      here = span <= 0 ? s_hi[j] : s_lo[j] + (s_hi[j] - s_lo[j]) * (at - t_lo[j]) / span;
    }
    double area = area_lo[j] + 0.5 * (s_lo[j] + here) * (at - t_lo[j]);
    return area / (at - first_t[j]);
  }

  // At most RunningAverage(j, at) for every `at` in [from, to], first_t < from and to <= last_t, rounding
  // allowed for. Within a stretch between knots k and k + 1 the running average is (area_to[k] + h (at -
  // t[k])) / (at - first_t) with h between the two knots' values, so at least that with the lower of them,
  // a function monotone in `at`: the lowest of its values at the stretch's ends.
  double Lowest(const Series& s, size_t j, double from, double to) {
    Advance(s, j, from);
    double low = kInf;
    for (size_t k = hi[j] - 1; k < knots[j]; ++k) {
      bool last = k + 1 == knots[j];
      double h = last ? s.s[k] : std::min(s.s[k], s.s[k + 1]);
      double most = last ? std::abs(s.s[k]) : std::max(std::abs(s.s[k]), std::abs(s.s[k + 1]));
      for (double at : {std::max(from, s.t[k]), last ? to : std::min(to, s.t[k + 1])}) {
        double d = at - s.t[k], w = at - first_t[j];
        double v = (s.area_to[k] + h * d) / w;
        low = std::min(low, v - 1e-12 * ((std::abs(s.area_to[k]) + most * d) / w + std::abs(v)));
      }
      if (last || s.t[k + 1] > to) break;
    }
    return low;
  }
};

// Each batch bounds every evident curve once, so fewer, wider batches cost fewer bounds and judge a few more
// trials in full: at 10,000 trials x 1,000 points the rule took 0.09 s a tick in batches of 64, 0.07 s in
// batches of 128 and of 256, 0.09 s of 512 (stopping_tick_bench, load ~5).
constexpr size_t kBatch = 256;

}  // namespace

void MedianBySweep(Context& c) {
  if (c.config.median.min_trials < 1) return;
  std::vector<std::pair<double, size_t>> latest = MedianLatest(c);
  // The trials judged, by the time they are judged at (each is judged alone: the order changes nothing).
  std::vector<std::pair<double, size_t>> judged;
  for (size_t i = 0; i < c.trials.size(); ++i) {
    if (auto at = MedianTime(c, i, latest)) judged.emplace_back(*at, i);
  }
  std::sort(judged.begin(), judged.end());
  // Only evident curves are ever others.
  std::vector<size_t> evident;
  for (size_t j = 0; j < c.series.size(); ++j) {
    if (c.Evident(j)) evident.push_back(j);
  }
  Segments seg(c);
  std::vector<double> others;
  others.reserve(evident.size());
  auto judge = [&](double at, size_t i) {
    others.clear();
    double se = 0;
    for (size_t j : evident) {
      if (!c.Rival(i, j) || !seg.Reached(j, at)) continue;
      seg.Advance(c.series[j], j, at);
      others.push_back(seg.RunningAverage(j, at));
      se += seg.se[j];
    }
    MedianJudge(c, i, at, others, se, true);
  };
  const MedianRuleConfig& cfg = c.config.median;
  // The others' typical standard error (their sum over their number, summed in any order) is at least the
  // least of the evident curves', but for the sum's rounding.
  double least_se = kInf;
  for (size_t j : evident) least_se = std::min(least_se, seg.se[j]);
  least_se *= 1 - 1e-8;
  std::vector<double> lowest(c.series.size(), kInf), spanning;  // per curve spanning the batch; sorted
  std::vector<size_t> partly;                                   // curves reached only within the batch
  std::vector<char> spans(c.series.size(), 0);
  for (size_t b = 0; b < judged.size(); b += kBatch) {
    size_t e = std::min(b + kBatch, judged.size());
    double from = judged[b].first, to = judged[e - 1].first;
    spanning.clear(), partly.clear();
    for (size_t j : evident) {
      spans[j] = seg.first_t[j] < from && seg.last_t[j] >= to;
      if (spans[j]) spanning.push_back(lowest[j] = seg.Lowest(c.series[j], j, from, to));
      else if (seg.last_t[j] >= from && seg.first_t[j] <= to) partly.push_back(j);
    }
    std::sort(spanning.begin(), spanning.end());
    for (size_t k = b; k < e; ++k) {
      auto [at, i] = judged[k];
      // The margin, hypot(Se(i), the others' typical one), is at least `least`: a value not below
      // mine - least is not below the bar, and the quantile at or above it plus the margin is not below mine.
      double mine = c.series[i].RunningAverage(at);
      double least = std::hypot(c.Se(i), least_se) * (1 - 1e-12), bar = mine - least;
      if (!(bar + least >= mine)) {
        judge(at, i);
        continue;
      }
      size_t n = spanning.size(), below = std::lower_bound(spanning.begin(), spanning.end(), bar) - spanning.begin();
      for (size_t j : c.kin_members[c.kin[i]]) {  // i and its siblings are not others
        if (c.Evident(j) && spans[j]) n -= 1, below -= lowest[j] < bar;
      }
      for (size_t j : partly) {
        if (!c.Rival(i, j) || !seg.Reached(j, at)) continue;
        ++n;
        below += c.series[j].RunningAverage(at) < bar;
      }
      if (static_cast<int>(n) < cfg.min_trials) continue;  // MedianJudge decides nothing either
      if (below > static_cast<size_t>(std::floor(cfg.quantile * static_cast<double>(n - 1)))) judge(at, i);
    }
  }
}

}  // namespace sweep::stopping
