// The throughput rule (early_stop.h): trials that share a loss-per-iteration curve race on speed,
// and a trial is stopped once a live rival will be lower at the budget, or, rule (6), is lower at
// equal time by more than the noise and stays ahead however the gap closes.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "stopping/lower_rivals.h"
#include "stopping/rules.h"

namespace sweep::stopping {
namespace {

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
      for (const auto& [k, v] : kept) key.append(k).append(1, '=').append(v).append(1, ';');
      int g = ids.emplace(key, static_cast<int>(ids.size())).first->second;
      group_.push_back(g);
      // A rate only from trials with the evidence to be compared (enough points, enough of the budget).
      rate_.push_back(c.Evident(i) ? c.series[i].Rate(std::max(2, c.config.throughput.min_points)) : std::nullopt);
      if (rate_.back()) fastest_ = std::max(fastest_, *rate_.back());
      noise_known_ = noise_known_ && !std::isnan(c.Noise(i)) && !std::isnan(c.Se(i));
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
  size_t groups() const { return members_.size(); }
  // Up to this many groups, ProgressMayStop weighs each trial judged against every other group: a few
  // dozen configurations times throughput knobs is the common study; beyond, the rivals are listed.
  static constexpr size_t kFewGroups = 64;
  // Whether group g holds a sibling of trial i (then its pooled curve differs in i's view).
  bool HoldsSibling(int g, size_t i) const {
    if (!c_.HasSiblings(i)) return false;
    for (size_t j : c_.kin_members[c_.kin[i]]) {
      if (j != i && group_[j] == g && !c_.series[j].empty()) return true;
    }
    return false;
  }
  // The first and the furthest iteration group g has logged, in trial i's view (its siblings left out).
  double MinStep(int g, size_t i) const {
    if (!HoldsSibling(g, i)) return min_step_[g];
    double least = kInf;
    for (size_t j : members_[g]) {
      if (!c_.Sibling(i, j)) least = std::min(least, static_cast<double>(c_.series[j].step.front()));
    }
    return least;
  }
  double MaxStep(int g, size_t i) const {
    if (!HoldsSibling(g, i)) return max_step_[g];
    double most = -kInf;
    for (size_t j : members_[g]) {
      if (!c_.Sibling(i, j)) most = std::max(most, static_cast<double>(c_.series[j].step.back()));
    }
    return most;
  }
  std::optional<double> rate(size_t i) const { return rate_[i]; }
  // The highest rate of any trial.
  double fastest() const { return fastest_; }
  // No trial's Noise or Se is NaN.
  bool noise_known() const { return noise_known_; }
  // Group g's trials with a rate, fastest first (ties by index).
  const std::vector<size_t>& FastestFirst(int g) const {
    if (by_rate_.empty()) by_rate_.resize(members_.size());
    std::optional<std::vector<size_t>>& out = by_rate_[g];
    if (!out) {
      out.emplace();
      for (size_t j : members_[g]) {
        if (rate_[j]) out->push_back(j);
      }
      std::stable_sort(out->begin(), out->end(), [&](size_t a, size_t b) { return *rate_[a] > *rate_[b]; });
    }
    return *out;
  }
  // Group g's trials with a curve, in order.
  const std::vector<size_t>& members(int g) const { return members_[g]; }

  // The group's smoothed loss at iteration n, averaged over the members that reached it; in the
  // view of trial `judged` (when given), its siblings left out: a trial's prediction is never
  // taken from another repeat of its configuration.
  std::optional<double> Pooled(int g, double n, std::optional<size_t> judged = std::nullopt) const {
    double sum = 0;
    int count = 0;
    for (size_t j : members_[g]) {
      if (judged && c_.Sibling(*judged, j)) continue;
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

  // At most any trial's UpperBoundAtBudget: each is a smoothed value of a curve, read at a time or
  // averaged over a group, so at least the lowest smoothed value of any curve, but for rounding (a
  // lookup's and an average's, a few units in the last place of the largest value they read).
  double Lowest() const {
    if (!lowest_) {
      double least = kInf, scale = 0;
      for (size_t j = 0; j < c_.trials.size(); ++j) {
        const Series& s = c_.series[j];
        if (s.empty()) continue;
        least = std::min(least, s.min_s);
        for (double v : s.s) scale = std::max(scale, std::abs(v));
      }
      lowest_ = least - 1e-9 * std::max(scale, std::abs(least)) - 1e-300;
    }
    return *lowest_;
  }

  // The largest GapPerIteration(a, b).first over the other groups b (-inf: none), for a trial of group a
  // without siblings (whose view is every group whole); cached per group.
  double MostProgressOver(int a, size_t judged) const {
    if (most_progress_.empty()) most_progress_.resize(members_.size());
    std::optional<double>& out = most_progress_[a];
    if (!out) {
      out = -kInf;
      for (size_t b = 0; b < members_.size(); ++b) {
        if (static_cast<int>(b) == a || members_[b].empty()) continue;
        // Each pair once here (this maximum is what is kept): not through the pairs' cache, whose inserts and
        // clears cost more than the pairs themselves with thousands of groups (issue 42: 2,500 groups, 6M pairs).
        if (auto g = Gap(a, static_cast<int>(b), judged); g && g->first > *out) out = g->first;
      }
    }
    return *out;
  }

  // How much less group a's loss has fallen than group b's, from the first iteration both
  // logged to the furthest both reached, and that iteration: progress per iteration. Levels are
  // not compared because first losses differ by initialisation and data order alone (up to 0.1
  // nats on bench/data), an offset that washes out in training.
  // In the view of trial `judged`: groups that hold its siblings are pooled without them (cached
  // for that trial only).
  std::optional<std::pair<double, double>> GapPerIteration(int a, int b, size_t judged) const {
    bool apart = HoldsSibling(a, judged) || HoldsSibling(b, judged);
    if (apart && gaps_of_ != judged) gaps_apart_.clear(), gaps_of_ = judged;
    // A cache, bounded: pairs of groups grow as the square of the groups (10,000 trials in 2,500 groups
    // of converged curves held 4M pairs, 340 MB, in one tick; issue 42's 512 MB for run).
    if (gaps_.size() >= c_.config.throughput.max_cached_gaps) gaps_.clear();
    auto [it, fresh] = (apart ? gaps_apart_ : gaps_).try_emplace({a, b});
    if (fresh) it->second = Gap(a, b, judged);
    return it->second;
  }

  // GapPerIteration, computed.
  std::optional<std::pair<double, double>> Gap(int a, int b, size_t judged) const {
    bool apart = HoldsSibling(a, judged) || HoldsSibling(b, judged);
    double first = std::max(MinStep(a, judged), MinStep(b, judged));
    double last = std::min(MaxStep(a, judged), MaxStep(b, judged));
    if (!(last > first)) return std::nullopt;
    // Whole groups' pooled curves, read at the same few iterations for every pair: kept.
    auto pooled = [&](int g, double n) {
      if (apart) return Pooled(g, n, judged);
      auto [at, fresh] = pooled_.try_emplace(PooledKey{g, n});
      if (fresh) at->second = Pooled(g, n);
      return at->second;
    };
    auto a0 = pooled(a, first), b0 = pooled(b, first), a1 = pooled(a, last), b1 = pooled(b, last);
    if (!(a0 && b0 && a1 && b1)) return std::nullopt;
    return std::pair{(*b0 - *b1) - (*a0 - *a1), last};
  }

  // Loss trial i will at most have at the budget, given that loss falls with iterations: what it
  // has now, or its group's measured loss at the iteration it will reach, if measured.
  // Cached per trial: the rule asks it of each rival for each trial it judges, always at budget_s.
  // `judged`: the trial it is weighed against, whose siblings are left out of the pooled curve.
  double UpperBoundAtBudget(size_t i, double budget, size_t judged) const {
    if (HoldsSibling(group_[i], judged)) return ComputeUpperBoundAtBudget(i, budget, judged);
    if (budget == c_.config.budget_s) {
      if (upper_.empty()) upper_.resize(c_.trials.size());
      if (!upper_[i]) upper_[i] = ComputeUpperBoundAtBudget(i, budget, std::nullopt);
      return *upper_[i];
    }
    return ComputeUpperBoundAtBudget(i, budget, std::nullopt);
  }
  double ComputeUpperBoundAtBudget(size_t i, double budget, std::optional<size_t> judged) const {
    const Series& s = c_.series[i];
    double bound = s.s.back();
    if (s.last_t() >= budget) return s.At(budget);
    if (c_.trials[i].phase == TrialPhase::kCompleted) return bound;  // finished before the budget
    if (auto n = StepAt(i, budget)) {
      double most = judged ? MaxStep(group_[i], *judged) : max_step_[group_[i]];
      if (auto v = Pooled(group_[i], std::min(*n, most), judged)) bound = std::min(bound, *v);
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
  // that far (by a faster or earlier member of another configuration, or itself); nullopt otherwise.
  std::optional<double> MeasuredAtBudget(size_t i, double budget) const {
    auto n = StepAt(i, budget);
    if (!n || *n > MaxStep(group_[i], i)) return std::nullopt;
    return Pooled(group_[i], *n, i);
  }

 private:
  const Context& c_;
  std::vector<int> group_;                    // per trial
  std::vector<std::optional<double>> rate_;   // per trial: iterations per axis second
  std::vector<std::vector<size_t>> members_;  // per group: trials with a curve
  std::vector<double> min_step_, max_step_;   // per group
  mutable std::map<std::pair<int, int>, std::optional<std::pair<double, double>>> gaps_;
  mutable std::map<std::pair<int, int>, std::optional<std::pair<double, double>>> gaps_apart_;  // of gaps_of_
  mutable size_t gaps_of_ = 0;
  // Pooled(g, n) of whole groups, hashed: looked up four times a pair of groups.
  struct PooledKey {
    int g;
    double n;
    bool operator==(const PooledKey& o) const { return g == o.g && n == o.n; }
  };
  struct PooledHash {
    size_t operator()(const PooledKey& k) const {
      return std::hash<double>()(k.n) * 0x9E3779B97F4A7C15ull ^ static_cast<size_t>(k.g);
    }
  };
  mutable std::unordered_map<PooledKey, std::optional<double>, PooledHash> pooled_;
  mutable std::vector<std::optional<double>> upper_;  // UpperBoundAtBudget at budget_s, per trial
  double fastest_ = -kInf;
  mutable std::optional<double> lowest_;
  bool noise_known_ = true;
  mutable std::vector<std::optional<std::vector<size_t>>> by_rate_;  // FastestFirst, per group
  mutable std::vector<std::optional<double>> most_progress_;         // MostProgressOver, per group
};

// Rule (1) stops a trial on rates alone: its sibling's faster rate says it will be further along
// the shared curve at the budget. A rate predicts no further ahead than it has been observed (as
// rule (5)'s line does not): a periodic stall (an evaluation, a checkpoint) whose period is longer than
// the time observed has not shown yet, and before it the stalling trial looks the faster. On
// hybrid-50it (bench/data/megatron-more/other-h100) one layout ran 0.142 s an iteration and stalled
// 1.2 s every 10; its sibling ran 0.161 s and stalled 0.8 s; at 1.5 s of the 10.5 s budget, before
// either stall, the sibling (the best at the budget) was stopped as 1.14x slower. So both rates must
// have been observed for at least the time left to the budget (over `rate_horizon`, 1 by default: a
// study that knows its periodic events are short can trust a rate further). Without a budget the
// horizon is unknown and only the stall window (Context::Evident) guards.
bool RatesSeenAsFarAsTheBudget(const Context& c, size_t i, size_t j) {
  if (c.config.budget_s <= 0) return true;
  const Series& me = c.series[i];
  const Series& them = c.series[j];
  double seen = std::min(me.last_t() - me.first_t(), them.last_t() - them.first_t());
  return seen * c.config.throughput.rate_horizon >= c.config.budget_s - me.last_t();
}

// Whether rules (2) and (3) can stop trial i (rate `mine`, no siblings) for any rival: (3) needs a group
// that progressed more than the progress margin, which is at least max(margin, sqrt(Noise(i)^2 + Se(i)^2))
// (the rival's terms only add; a NaN among them leaves the margin itself); (2) a rival rival_speedup times
// as fast, so at least the fastest trial.
bool ProgressMayStop(const Context& c, const ThroughputModel& model, size_t i, double mine) {
  const ThroughputRuleConfig& cfg = c.config.throughput;
  if (cfg.rival_speedup > 0 && model.fastest() / mine >= cfg.rival_speedup) return true;
  double own = std::sqrt(c.Noise(i) * c.Noise(i) + c.Se(i) * c.Se(i));
  double least = model.noise_known() ? std::max(cfg.margin, own) : cfg.margin;
  return !(model.MostProgressOver(model.group(i), i) <= least);
}

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

// The rule's least margin, max(throughput.margin, Se(i)): what LowerRivals lists the rivals by.
double LeastMargin(const Context& c, size_t i) { return std::max(c.config.throughput.margin, c.Se(i)); }

// Indexed path (Context::floors): rival j cannot be lower than trial i at `at` by rule (6)'s margin, which
// is at least throughput.margin and the trial's own Se(i), as the floor under its curve there shows.
bool CannotLead(const Context& c, size_t i, size_t j, double at) {
  if (!c.floors) return false;
  double least_margin = LeastMargin(c, i);
  double widest_gap = c.series[i].At(at) - c.floors->Floor(j, at);
  return widest_gap * (1 + 1e-9) + 1e-300 < least_margin * (1 - 1e-9);
}

// `lower`: on the indexed path, the index of the live rivals (null: every live one is looked at). Those it
// would list for trial i at LeastMargin are compared at min(i's end, theirs), as here while i has not run past
// the budget; they are taken by how much lower they can be, most first, until no other can beat the best.
std::optional<Lead> LeadAtEqualTime(const Context& c, size_t i, LowerRivals* lower) {
  const Series& me = c.series[i];
  const double budget = c.config.budget_s;
  if (budget <= 0 || !c.LossEvident(i)) return std::nullopt;
  // Rival j's lead, when it is one: lower at equal time by more than the margin and, projected, still at
  // the budget. The lead is the largest projected gap, the first rival (by index) of those that tie.
  auto lead_of = [&](size_t j) -> std::optional<Lead> {
    const Series& them = c.series[j];
    double at = std::min({me.last_t(), them.last_t(), budget});
    double from = std::max(me.first_t(), them.first_t());
    if (!(at > from)) return std::nullopt;
    if (CannotLead(c, i, j, at)) return std::nullopt;
    double a = from + (at - from) / 3, b = from + 2 * (at - from) / 3;
    // Both at the budget: the objective itself is measured, and the gap there decides; nothing is
    // left to project, so neither the bend nor the closing pace matters.
    bool at_budget = at >= budget;
    double gap = me.At(at) - them.At(at);
    // The margin the gap must exceed (the rival's noise read at `at`: why, below).
    double m = std::max(c.config.throughput.margin, std::hypot(c.Se(i), c.SeAt(j, at)));
    // Bent: its recent slope in time no steeper than the one before, beyond what its noise explains.
    // The difference of the two secant slopes, (s(b) - s(a)) / (b - a) - (s(at) - s(b)) / (at - b),
    // carries the noise of three smoothed values; compared without it, a flat noisy curve looks
    // steepening half the time, and the rule waited on it (issue 30). A real steepening (a warm-up,
    // a cosine decay's late descent) is larger than that and holds the rule back, but only while the
    // gap may be closing (issue 44): where the gap was already beyond the margin a third of the window
    // ago and has widened since, the rival descends faster still, and steepening is no reason to
    // wait; the closing pace below, with its noise allowance, still decides whether the gap stays open
    // to the budget. moe-50it's slower trials were held so from 8 s to 14 s of 14.7 s while their gap
    // grew from 0.03 to 0.11 nats. A gap that was within the margin a third ago is not enough: in
    // gpt-50it (gpt-gb200) the best trial fell 0.028 behind a near-tie (margin 0.02) in the last third
    // of its steep early descent, and caught up; in gpt-100it-pile the best trial was 0.12 *ahead* at
    // the start of the window, then behind by 0.14, then ahead again.
    double gap_then = me.At(b) - them.At(b);
    bool widening = gap_then > m && gap > gap_then;
    // Nor is it where the gap was already beyond its noise a third ago (the two curves' standard errors
    // read then, without the margin's floor: behind, not yet by enough to stop) and has widened since
    // by more than a change of gap can by noise (the closing pace's allowance below: then it is 0).
    // moe-50it's two nondeterministic layouts (other-lts-a100) trailed the best by 0.013 (margin 0.02)
    // and then fell to 0.038 behind while steepening: held from 5.7 s to 8.5 s of 14.7 s before. A gap
    // within its noise then, however it widens, still holds: gpt-50it's best was 0.002 behind a
    // near-tie, fell 0.028 behind in two points, and caught up.
    widening = widening || (gap_then > std::hypot(c.SeAt(i, b), c.SeAt(j, b)) &&
                            gap - gap_then > std::sqrt(2.0) * std::hypot(c.Se(i), c.Se(j)));
    if (!at_budget && !widening && SteeperBeyondNoise(me, c.Se(i), a, b, at)) return std::nullopt;
    // The rival's noise at the time compared, not at its end: a rival that ran past `at` (a completed
    // one, one after another; a faster one, all at once) has grown noisier since, as losses do while
    // they fall (issue 30). The trial judged keeps the noise of its whole curve: it is the one to be
    // stopped, and an earlier, quieter estimate of its own noise is no reason to stop it sooner (read
    // at `at` too, it cost more on other-lts-a100, +0.165 over the floor instead of +0.147: its noise
    // from fewer points has the wider Student-t quantile).
    // The closing pace below keeps both curves' whole noise: read at `at` there too, it lost the best
    // trial of gpt-100it-pile one after another (0.0785 nats, kept in 87% of orders); the pace is a
    // projection, and its allowance is what keeps a trial whose lead once flipped.
    if (gap <= m) return std::nullopt;
    if (at_budget) return Lead{j, at, gap, m, 0, gap};
    double closing =
        std::max(0.0, (me.At(b) - them.At(b)) - gap + std::sqrt(2.0) * std::hypot(c.Se(i), c.Se(j))) / (at - b);
    double projected = gap - closing * (budget - at);
    if (projected > m) return Lead{j, at, gap, m, closing, projected};
    return std::nullopt;
  };
  auto takes = [&](size_t j) { return c.Rival(i, j) && c.live[j] && c.LossEvident(j); };
  std::optional<Lead> best;
  if (!lower || me.last_t() > budget) {
    for (size_t j : c.MaybeLive()) {
      if (!takes(j)) continue;
      if (auto lead = lead_of(j); lead && (!best || lead->projected > best->projected)) best = lead;
    }
    return best;
  }
  // A lead's projected gap is at most the gap at equal time (it only closes), which is at most MostBelow: the
  // rivals are taken most below first, each refined to what lead_of would project for it (the same numbers
  // from the same expressions; the gap itself at the budget) before the bend and the margin are weighed, until
  // none left can beat the best.
  auto projected_of = [&](size_t j) -> std::optional<double> {
    if (!takes(j)) return std::nullopt;
    const Series& them = c.series[j];
    double at = std::min({me.last_t(), them.last_t(), budget});
    double from = std::max(me.first_t(), them.first_t());
    if (!(at > from) || CannotLead(c, i, j, at)) return std::nullopt;
    double gap = me.At(at) - them.At(at);
    if (!(gap > c.config.throughput.margin)) return std::nullopt;  // lead_of's margin is at least that
    if (at >= budget) return gap;
    double b = from + 2 * (at - from) / 3;
    double closing =
        std::max(0.0, (me.At(b) - them.At(b)) - gap + std::sqrt(2.0) * std::hypot(c.Se(i), c.Se(j))) / (at - b);
    double projected = gap - closing * (budget - at);
    if (!(projected > c.config.throughput.margin)) return std::nullopt;
    return projected;
  };
  auto weigh = [&](size_t j) {
    auto lead = lead_of(j);
    if (lead &&
        (!best || lead->projected > best->projected || (lead->projected == best->projected && j < best->rival))) {
      best = lead;
    }
  };
  lower->MostBelowFirst(me, LeastMargin(c, i), projected_of, weigh, [&] { return best ? best->projected : -kInf; });
  return best;
}

void StopForLead(Context& c, size_t i, LowerRivals* lower) {
  if (!c.config.throughput.lead) return;
  if (auto lead = LeadAtEqualTime(c, i, lower)) {
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

}  // namespace

void Throughput(Context& c) {
  const ThroughputRuleConfig& cfg = c.config.throughput;
  ThroughputModel model(c);
  // Indexed path: the live rivals that may be lower at equal time, for the comparisons that need one lower
  // by at least LeastMargin (lower_now, rule (6)); listed for a trial only when a rule needs the list.
  std::optional<LowerRivals> index;
  if (c.floors) index.emplace(c.series.of, c.live);
  auto may_be_lower = [&](size_t i) -> const std::vector<size_t>& {
    if (!index) return c.MaybeLive();
    return index->Of(c.series[i], LeastMargin(c, i));
  };
  // Every stop below: the index forgets the trial.
  auto stop = [&](size_t i, std::string rule, std::string reason, double value, double threshold, int refs) {
    c.Stop(i, std::move(rule), std::move(reason), value, threshold, refs);
    if (index) index->Remove(i);
  };
  auto lead = [&](size_t i) {
    StopForLead(c, i, index ? &*index : nullptr);
    if (index && c.decided[i]) index->Remove(i);
  };
  // Indexed path: whether rules (2) and (3) can stop trial i at all (see ProgressMayStop); when not, its
  // rivals are not listed for them.
  auto progress_may_stop = [&](size_t i, double mine) {
    if (!index || model.groups() > ThroughputModel::kFewGroups || c.HasSiblings(i)) return true;
    return ProgressMayStop(c, model, i, mine);
  };
  // Slowest first, so that a chain of siblings collapses onto the fastest one.
  std::vector<size_t> order;
  for (size_t i = 0; i < c.trials.size(); ++i) order.push_back(i);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return model.rate(a).value_or(kInf) < model.rate(b).value_or(kInf); });
  for (size_t i : order) {
    if (!c.Candidate(i) || c.series[i].last_t() < cfg.grace_s) continue;
    if (!model.rate(i)) {
      lead(i);  // (6) needs no rate
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
    auto sibling_need = [&](size_t j) { return 1 + cfg.rate_margin + std::hypot(c.RateSe(i), c.RateSe(j)); };
    if (index) {
      // Only its group's trials can be such siblings, fastest first (ties by index): the first fast enough is
      // the fastest, and none slower than 1 + rate_margin times its rate is (the need is at least that).
      double least = mine * (1 + cfg.rate_margin);
      for (size_t j : model.FastestFirst(model.group(i))) {
        if (*model.rate(j) < least) break;
        if (!c.Rival(i, j) || !c.live[j] || !RatesSeenAsFarAsTheBudget(c, i, j)) continue;
        if (double need = sibling_need(j); *model.rate(j) >= mine * need) {
          rival = j, needed = need;
          break;
        }
      }
    } else {
      for (size_t j : c.MaybeLive()) {
        if (!c.Rival(i, j) || !c.live[j] || model.group(j) != model.group(i) || !model.rate(j)) continue;
        if (!RatesSeenAsFarAsTheBudget(c, i, j)) continue;
        double need = sibling_need(j);
        if (*model.rate(j) >= mine * need && (!rival || *model.rate(j) > *model.rate(*rival))) rival = j, needed = need;
      }
    }
    if (rival) {
      double theirs = *model.rate(*rival);
      stop(i, "throughput",
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
      if (!c.Evident(j)) return std::nullopt;
      const Series& them = c.series[j];
      // The floors keep each curve's ends beside each other: read there, not in the curve (indexed path).
      double at = std::min(me.last_t(), c.floors ? c.floors->last_t(j) : them.last_t());
      if (!me.Reached(at) || !(c.floors ? c.floors->Reached(j, at) : them.Reached(at))) return std::nullopt;
      double m = c.Margin(i, j, floor);
      double bar = me.At(at) - m;
      // Indexed path: a rival whose curve's floor there is not below the bar is not lower (curve_floor.h).
      if (c.floors && !(c.floors->Floor(j, at) < bar)) return std::nullopt;
      if (them.At(at) < bar) return m;
      return std::nullopt;
    };
    // Another group's trial, compared on progress per iteration (how much the loss fell since
    // the first iteration both logged; see GapPerIteration) and on speed. One that is much faster
    // and has progressed no worse, or is no slower and has progressed clearly better, is expected
    // to end lower: the iterations this trial lacks, or its deficit per iteration, would have to
    // reverse by more than the margin before the budget.
    // The rivals that may be lower at equal time by LeastMargin (every live one on the reference path):
    // lower_now needs one lower by its margin, at least that. It is asked last, the dearest.
    std::optional<size_t> rival_group;
    std::pair<double, double> gap;
    double gap_margin = 0;
    if (progress_may_stop(i, mine)) {
      for (size_t j : may_be_lower(i)) {
        if (!c.Rival(i, j) || !c.live[j] || model.group(j) == model.group(i) || !model.rate(j)) continue;
        double speedup = *model.rate(j) / mine;
        if (speedup < 1) continue;
        if (rival_group && !(*model.rate(j) > *model.rate(*rival_group))) continue;
        auto g = model.GapPerIteration(model.group(i), model.group(j), i);
        if (!g) continue;
        // Progress is a difference of differences: its first values are single raw points (the
        // smoothing has nothing to average yet), so its noise is the raw noise of both curves at
        // the start plus the smoothed noise at the end.
        double progress_margin = std::max(cfg.margin, std::sqrt(c.Noise(i) * c.Noise(i) + c.Noise(j) * c.Noise(j) +
                                                                c.Se(i) * c.Se(i) + c.Se(j) * c.Se(j)));
        bool much_faster = cfg.rival_speedup > 0 && speedup >= cfg.rival_speedup && g->first >= -progress_margin;
        bool better = g->first > progress_margin;
        if (!much_faster && !better) continue;
        auto m = lower_now(j, cfg.margin);
        if (!m) continue;
        rival_group = j, gap = *g, gap_margin = *m;
      }
    }
    if (rival_group) {
      double theirs = *model.rate(*rival_group);
      stop(i, "throughput",
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
    const double budget = c.config.budget_s;
    // (4) and (5) stop the trial only when their value is above the best rival's bound plus margin. On the
    // indexed path a rival whose bound plus margin is not below either value cannot make either stop it,
    // nor be the best when one does (the best is the least), so it is passed over; and without either
    // value, or when no bound can be low enough (Lowest), no rival is looked for. Bounds and margins are
    // finite (smoothed losses are), so the least of those left, the first of them that ties, is the
    // reference path's best whenever it matters.
    std::optional<double> predicted = model.MeasuredAtBudget(i, budget);
    std::optional<double> line = cfg.extrapolate ? model.ConvexLowerBound(i, budget) : std::nullopt;
    double worst = index ? -kInf : kInf;
    if (index) {
      for (const std::optional<double>& v : {predicted, line}) worst = v && *v > worst ? *v : worst;
    }
    if (worst == -kInf || (index && !(model.Lowest() + cfg.margin < worst))) {
      lead(i);  // (6) compares at equal time with its own margins, and needs no rival here
      continue;
    }
    std::optional<size_t> best;
    double best_bound = kInf, best_margin = 0;
    for (size_t j : may_be_lower(i)) {
      if (!c.Rival(i, j) || !c.live[j] || c.series[j].empty()) continue;
      double bound = model.UpperBoundAtBudget(j, budget, i);
      if (index && bound + c.Margin(i, j, cfg.margin) >= worst) continue;  // lower_now's margin, as below
      auto m = lower_now(j, cfg.margin);
      if (!m) continue;
      if (bound + *m < best_bound + best_margin || !best) best_bound = bound, best_margin = *m, best = j;
    }
    if (!best) {
      lead(i);  // (6) compares at equal time with its own margins, and needs no rival here
      continue;
    }
    if (predicted && *predicted > best_bound + best_margin) {
      stop(i, "throughput",
           fmt::format("at t={}: predicted value at the budget {} (its group's at iteration {:.0f}) is worse than "
                       "{} that trial {}, already better at equal time, will at most have, by more than {}",
                       Secs(me.last_t()), Num(c.User(*predicted)), *model.StepAt(i, budget), Num(c.User(best_bound)),
                       Name(c.trials[*best]), Num(best_margin)),
           c.User(*predicted), c.User(best_bound), 1);
      continue;
    }
    // (5) Its own descent continued in a straight line to the budget: once a curve bends (its
    // recent slope per iteration no steeper than the one before), a loss that is convex in the
    // iteration lies above that line, so the line is a lower bound for the loss at the budget.
    if (line && *line > best_bound + best_margin) {
      stop(i, "throughput",
           fmt::format("at t={}: even its recent descent continued in a straight line to iteration {:.0f} "
                       "ends at {}, worse than {} that trial {}, already better at equal time, will at most have "
                       "at the budget, by more than {}",
                       Secs(me.last_t()), *model.StepAt(i, budget), Num(c.User(*line)), Num(c.User(best_bound)),
                       Name(c.trials[*best]), Num(best_margin)),
           c.User(*line), c.User(best_bound), 1);
      continue;
    }
    // (6) A rival lower at equal time that this trial is not catching up with fast enough: its
    // own curve has bent (so it will not suddenly descend faster), and the gap, closing at most
    // at its recent rate (plus the noise of that rate), is still above the margin at the budget.
    lead(i);
  }
}

}  // namespace sweep::stopping
