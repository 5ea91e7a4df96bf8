// The live rivals that may be lower at equal time; see lower_rivals.h.
#include "stopping/lower_rivals.h"

#include <algorithm>
#include <cmath>

namespace sweep::stopping {
namespace {

constexpr size_t kNone = static_cast<size_t>(-1);

// Interpolation (Lerp) rounds: a few units in the last place of the knots' values beyond them.
double Rounding(const Series& s) {
  double scale = 0;
  for (double v : s.s) scale = std::max(scale, std::abs(v));
  return 1e-12 * scale;
}

}  // namespace

LowerRivals::LowerRivals(const std::vector<const Series*>& series, const std::vector<bool>& live)
    : where_(series.size(), kNone), floor_(series.size(), kInf), ceiling_(series.size(), kInf) {
  for (size_t j = 0; j < series.size(); ++j) {
    if (live[j] && !series[j]->empty()) order_.push_back(j);
  }
  std::sort(order_.begin(), order_.end(),
            [&](size_t a, size_t b) { return series[a]->last_t() < series[b]->last_t(); });
  while (width_ < order_.size()) width_ *= 2;
  tree_.assign(2 * width_, kInf);
  for (size_t p = 0; p < order_.size(); ++p) {
    const Series& s = *series[order_[p]];
    where_[order_[p]] = p;
    end_.push_back(s.last_t());
    // No lookup in the curve is below its lowest knot, rounding aside.
    floor_[order_[p]] = *std::min_element(s.s.begin(), s.s.end()) - Rounding(s);
    tree_[width_ + p] = floor_[order_[p]];
  }
  for (size_t n = width_ - 1; n > 0; --n) tree_[n] = std::min(tree_[2 * n], tree_[2 * n + 1]);
}

void LowerRivals::Remove(size_t j) {
  if (j >= where_.size() || where_[j] == kNone) return;
  size_t n = width_ + where_[j];
  where_[j] = kNone;
  tree_[n] = kInf;
  for (n /= 2; n > 0; n /= 2) tree_[n] = std::min(tree_[2 * n], tree_[2 * n + 1]);
}

void LowerRivals::Collect(size_t node, size_t lo, size_t hi, size_t from, size_t to, double bar, double ceiling) {
  if (hi <= from || to <= lo || !(tree_[node] < bar)) return;
  if (node >= width_) {
    found_.push_back(order_[lo]);
    ceiling_[order_[lo]] = ceiling;
    return;
  }
  size_t mid = lo + (hi - lo) / 2;
  Collect(2 * node, lo, mid, from, to, bar, ceiling);
  Collect(2 * node + 1, mid, hi, from, to, bar, ceiling);
}

const std::vector<LowerRivals::Stretch>& LowerRivals::Stretches(const Series& me, double least_margin) {
  stretches_.clear();
  auto bar = [&](double ceiling) {
    // The rival must be below ceiling - least_margin; the subtraction's rounding and the rules' own allowed for.
    return (ceiling - least_margin) + 1e-9 * (std::abs(ceiling) + std::abs(least_margin)) + 1e-300;
  };
  auto place = [&](double at) {
    return static_cast<size_t>(std::lower_bound(end_.begin(), end_.end(), at) - end_.begin());
  };
  // Rivals that end at or past me are compared at my end, where my value is my last knot (Lerp clamps).
  size_t past = place(me.last_t());
  stretches_.push_back({past, order_.size(), me.s.back(), bar(me.s.back())});
  // Those that end within my curve, at a time in the stretch of knots [e, f): my value there is between
  // two knots of [e, f], so at most the highest of them. Stretches of single knots near my end, doubling
  // backwards, and at most 1/16 of the knots each.
  size_t k = me.t.size();
  std::vector<size_t>& edges = edges_;
  edges = {0, k - 1};
  for (size_t back = 1; back < k; back *= 2) edges.push_back(k - 1 - back);
  for (size_t e = 0; e < 16; ++e) edges.push_back(e * (k - 1) / 16);
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  double rounding = Rounding(me);
  for (size_t r = 0; r + 1 < edges.size(); ++r) {
    size_t e = edges[r], f = edges[r + 1];
    size_t from = place(me.t[e]), to = place(me.t[f]);
    if (from >= to) continue;
    double ceiling = *std::max_element(me.s.begin() + static_cast<std::ptrdiff_t>(e),
                                       me.s.begin() + static_cast<std::ptrdiff_t>(f) + 1);
    stretches_.push_back({from, to, ceiling + rounding, bar(ceiling + rounding)});
  }
  return stretches_;
}

const std::vector<size_t>& LowerRivals::Of(const Series& me, double least_margin) {
  found_.clear();
  if (me.empty() || order_.empty()) return found_;
  for (const Stretch& st : Stretches(me, least_margin)) {
    Collect(1, 0, width_, st.from, st.to, st.bar, st.ceiling);
  }
  std::sort(found_.begin(), found_.end());
  return found_;
}

}  // namespace sweep::stopping
