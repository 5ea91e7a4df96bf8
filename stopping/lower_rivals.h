// Which live rivals may be lower than a trial at equal time by a margin, found without looking at each
// (issue 42): the throughput rule asks it of every trial it judges, and at 10,000 trials its walks over
// every live rival, a curve lookup each, were most of a tick. Internal to stopping/; made once per
// evaluation on the indexed path (RulePath::kIndexed), absent on the reference path.
//
// The rules compare trial i with rival j at the time a = min(i's end, j's end). j can be lower there by
// the margin only if the lowest knot of its curve is below i's value at a minus the margin. So the rivals
// are kept sorted by the time their curve ends, with the lowest knot of each in a tree of minima; for
// trial i the rivals that end past it are compared at i's end, where i's value is its last knot, and
// those that end within its curve at a time in one of a few stretches of its knots (single knots near
// its end, wider ones further back), where i's value is at most the highest knot of the stretch. Each
// stretch is one descent of the tree to the rivals below its bar: a superset of those that can be lower,
// which the rules then compare in full, as before. Rounding is allowed for on both sides. Rule (6), which
// wants only the rival with the largest projected gap, does not list them: it searches the tree best first
// (MostBelowFirst) and stops once no rival left can beat the best lead found.
#pragma once

#include <cmath>
#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstddef>
#include <optional>
#include <vector>

#include "stopping/series.h"

namespace sweep::stopping {

class LowerRivals {
 public:
  // Indexes the trials that are `live` and have a curve.
  LowerRivals(const std::vector<const Series*>& series, const std::vector<bool>& live);
  // Trial j is no longer live (stopped during the evaluation).
  void Remove(size_t j);
  // The indexed trials j, in ascending order, but for those whose curve at a = min(me's end, j's end) is
  // surely not below me's value at a minus `least_margin` (at least by rounding): every rival that can be
  // lower there by a margin at least `least_margin` is listed. Valid until the next call, as found().
  const std::vector<size_t>& Of(const Series& me, double least_margin);
  const std::vector<size_t>& found() const { return found_; }
  // The trials Of(me, least_margin) lists, without listing them: best first by an upper bound of how much
  // lower than me each can be, so that a rule after the one rival that is lowest by some measure at most
  // that bound (rule (6)'s largest projected gap) looks at the few that can beat the best found so far.
  // Each one whose bound reaches `enough()` (the best the caller has found; -inf before) is given to
  // `refine(j)`, which returns a tighter bound for it (nullopt: it is none of the caller's), and, when that
  // still reaches enough(), at once to `take(j)` (which may raise enough()). The search ends once no bound
  // left reaches enough(): every rival whose bound is at least the final enough() is taken, ties included.
  template <class Refine, class Take, class Enough>
  void MostBelowFirst(const Series& me, double least_margin, Refine refine, Take take, Enough enough);
  // For a trial found by the last Of: at least me's value at a minus its own there, as the rules
  // compute both (rounding allowed for): how much lower than me it can be.
  double MostBelow(size_t j) const { return Below(ceiling_[j], floor_[j]); }

 private:
  // The places [from, to) in order_ of the rivals compared with me within one stretch of my curve, where
  // my value is at most `ceiling`; a rival there is listed when its floor is below `bar`.
  struct Stretch {
    size_t from, to;
    double ceiling, bar;
  };
  const std::vector<Stretch>& Stretches(const Series& me, double least_margin);
  static double Below(double ceiling, double floor) {
    return (ceiling - floor) + 1e-9 * (std::abs(ceiling) + std::abs(floor)) + 1e-300;
  }
  void Collect(size_t node, size_t lo, size_t hi, size_t from, size_t to, double bar, double ceiling);
  std::vector<Stretch> stretches_;
  std::vector<size_t> edges_;
  std::vector<size_t> order_;    // indexed trials by the end time of their curve
  std::vector<double> end_;      // that time, in the same order
  std::vector<size_t> where_;    // per trial: its place in order_, or npos
  std::vector<double> floor_;    // per trial: its lowest knot, rounding allowed for
  std::vector<double> ceiling_;  // per trial found: me's highest value where it is compared
  std::vector<double> tree_;     // minima of the lowest knots (rounding allowed for), leaves from width_
  size_t width_ = 1;
  std::vector<size_t> found_;
  // MostBelowFirst's queue, 16 bytes an entry: a node of the tree within a stretch, by its bound (Below of
  // the stretch's ceiling and the lowest floor under the node, at least that of any rival under it, as Below
  // falls as the floor rises).
  struct Entry {
    double bound;
    uint32_t node, stretch;
  };
  // Nodes over at most this many places are not queued: their rivals are refined at once.
  static constexpr size_t kScan = 8;
  std::vector<Entry> heap_;
};

template <class Refine, class Take, class Enough>
void LowerRivals::MostBelowFirst(const Series& me, double least_margin, Refine refine, Take take, Enough enough) {
  if (me.empty() || order_.empty()) return;
  auto lower = [](const Entry& a, const Entry& b) { return a.bound < b.bound; };
  std::vector<Entry>& heap = heap_;
  heap.clear();
  auto push = [&](Entry e) {
    heap.push_back(e);
    std::push_heap(heap.begin(), heap.end(), lower);
  };
  const std::vector<Stretch>& stretches = Stretches(me, least_margin);
  // Node n's places [lo, hi): node 1 spans all width_ of them, each level halves.
  auto span = [&](size_t n, size_t& lo, size_t& hi) {
    int depth = std::bit_width(n) - 1;
    size_t size = width_ >> depth;
    lo = (n - (size_t{1} << depth)) * size, hi = lo + size;
  };
  // A node of a stretch: queued by its bound, or, when small, each rival under it Of would list refined and
  // taken now (one that cannot reach enough() is passed over: its bound only falls when refined, enough()
  // only rises). Taken as soon as found, a lead raises enough() early and prunes the nodes left.
  auto visit = [&](size_t n, uint32_t r) {
    const Stretch& st = stretches[r];
    size_t lo, hi;
    span(n, lo, hi);
    if (hi <= st.from || st.to <= lo || !(tree_[n] < st.bar)) return;
    if (hi - lo > kScan) {
      push({Below(st.ceiling, tree_[n]), static_cast<uint32_t>(n), r});
      return;
    }
    for (size_t p = std::max(lo, st.from); p < std::min(hi, st.to); ++p) {
      double floor = tree_[width_ + p];
      if (!(floor < st.bar) || Below(st.ceiling, floor) < enough()) continue;
      std::optional<double> bound = refine(order_[p]);
      if (bound && !(*bound < enough())) take(order_[p]);
    }
  };
  for (size_t r = 0; r < stretches.size(); ++r) visit(1, static_cast<uint32_t>(r));
  while (!heap.empty() && !(heap.front().bound < enough())) {
    std::pop_heap(heap.begin(), heap.end(), lower);
    Entry e = heap.back();
    heap.pop_back();
    visit(2 * e.node, e.stretch);
    visit(2 * e.node + 1, e.stretch);
  }
}

}  // namespace sweep::stopping
