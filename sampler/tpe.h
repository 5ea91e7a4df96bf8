// TPE: a sampler that learns from ended trials, proposing the next configurations of a sweep.
// Pure logic with no I/O: the run loop derives the history from its database and asks for as
// many proposals as it has free slots; bench/search_bench runs the same code on test functions.
//
// Design. The Tree-structured Parzen Estimator (Bergstra et al. 2011; Optuna's TPESampler is the
// best-known implementation) splits the observations into the best few ("below": the top
// gamma(n) = min(ceil(n / 10), 25)) and the rest ("above"), fits a kernel density to each and
// proposes the candidate that maximises l(x) / g(x). Here the densities are multivariate: one
// product kernel per observation (truncated Gaussians in the parameter's own or log scale with
// Scott's bandwidth, a smoothed point mass for a categorical choice) plus a flat prior, so knobs
// that only work together (tp with pp, lr with the optimizer) are learnt together. Both densities
// share one bandwidth, set for all observations (Optuna's gives each its own; see tpe.cc), a
// narrower one than Optuna's for this study's own. Each density is mostly that joint density,
// mixed with the product of its marginals (Optuna's independent TPE), which carries what one knob
// taught across the others' ranges, where narrow product kernels say nothing; beyond
// the newest 25 observations of a density, older ones weigh less (Optuna's default weights).
//   Slurm sweeps run trials in parallel, and in what they observe:
//   - A batch of K (one job array) is proposed one by one; each pick joins the history as a
//     pending trial, and pending trials count as "above" (the constant liar), so the next pick
//     moves away from it. A pending trial's kernel in g is half the width of an observation's
//     and twice as tall at its centre: with the shared width, an observation's kernel would
//     only flatten l / g around the pick, not lower it there (see tpe.cc).
//   - Pruned trials are partial observations, ranked after every completed one by their value
//     at the stop; failed ones (OOM, crashes, timeouts) are infeasible: always "above", which
//     lowers the odds of their region.
//   - Observations of another study (warm start: the hardware or model changed) are ranked
//     within their own study, so a shift in scale between the two does not matter; their best
//     join "below" and the rest "above". Their kernels are wider than this study's: they tell
//     less precisely where the good region is now.
//   - A proposal is never a configuration the caller's feasibility check refuses (constraints,
//     parallelism rules, predicted OOM) nor one already in this study.
//   - Deterministic: the k-th proposal of a study draws from a generator seeded by (seed, k),
//     k = the number of this study's trials before it, so a resumed run that reads the same
//     history from its database proposes exactly what an uninterrupted one would.
// Small finite spaces (every parameter a choice or an integer, few configurations) are scored
// exhaustively: every feasible configuration not yet tried is a candidate.
// Module sampler/ (namespace sweep::sampler): model-based proposals; uses base/ only. This is its one
// public header. Not thread-safe; no state between calls.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace sweep::sampler {

struct Dimension {
  enum class Kind { kFloat, kInt, kCategorical };
  std::string name;
  Kind kind = Kind::kFloat;
  double lo = 0, hi = 1;  // float and int: inclusive bounds
  bool log = false;       // float and int: sampled and modelled in log scale (lo > 0)
  int choices = 0;        // categorical: the values are the indices 0 .. choices - 1
  int digits = 6;         // float: significant digits of a proposal (readable, stable trial keys)
};

// One value per dimension: the number itself, or a categorical choice's index.
using Point = std::vector<double>;

enum class Outcome {
  kComplete,    // ended with its objective value
  kPartial,     // stopped early (pruned): its value at the stop
  kInfeasible,  // failed, ran out of memory, timed out: a region to avoid
  kPending,     // proposed, not ended yet (constant liar)
  kIgnored,     // ended without telling anything (cancelled, lost): only never proposed again
};

struct Observation {
  Point x;
  Outcome outcome = Outcome::kPending;
  double value = 0;  // kComplete, kPartial: the objective, lower is better
  int source = 0;    // 0: this study, in trial order; > 0: a warm-start study
};

struct Options {
  uint64_t seed = 1;
  int startup = 10;     // this study's first trials are drawn at random (uniform, feasible)
  int candidates = 24;  // draws from l(x) scored per proposal (Optuna's n_ei_candidates)
  double prior_weight = 1.0;
  // Kernel widths as the factor of Scott's rule (see tpe.cc): this study's observations, and
  // another study's (a warm start), wider as they tell less precisely where the good region is now.
  double width = 0.15;
  double prior_width = 0.2;
  // Each density is this share the product of its marginals (independent TPE), the rest the joint
  // density (see tpe.cc); from 0 (the joint alone) to 1.
  double independent = 0.3;
};

// True when a configuration may be proposed (constraints, planner verdicts, OOM dominance).
using Feasible = std::function<bool(const Point&)>;

// Up to `k` new configurations, in order; fewer when no feasible configuration is left that this
// study has not tried. `history` is every trial of this study (source 0) in the order they were
// proposed, pending ones included, and any warm-start observations.
std::vector<Point> Propose(const std::vector<Dimension>& space, std::vector<Observation> history, int k,
                           const Options& options, const Feasible& feasible);

// A uniform draw (log-uniform in log dimensions), rounded as proposals are: the random search
// of bench/search_bench, and the sampler's start-up.
Point RandomPoint(const std::vector<Dimension>& space, uint64_t& rng_state);

}  // namespace sweep::sampler
