// Early stopping's settings (StoppingConfig): what a study asks of it, the time axis, smoothing,
// the evidence every comparison waits for, and each rule's settings. The study file
// (study/stopping_config.h) fills them in from [stopping]; the rules (stopping/early_stop.h) follow
// them. Vocabulary shared by both, so neither module depends on the other.
// Module base/: uses the standard library only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace sweep {

enum class TimeAxis { kTrainTime, kGpuTime };
enum class SmoothingKind { kNone, kEma, kRunningMean };

struct Smoothing {
  SmoothingKind kind = SmoothingKind::kEma;
  double ema_alpha = 0.3;  // weight of the newest point; the average is debiased (Adam-style)
  int window = 5;          // running_mean: points
};

struct MedianRuleConfig {
  bool enabled = false;
  double grace_s = 0;     // no decision before the trial has run this long
  int min_trials = 3;     // other trials that reached t, else no decision
  double quantile = 0.5;  // 0.5 = median; stop when worse than this quantile
};

struct HalvingRuleConfig {
  bool enabled = false;
  double eta = 3;
  double min_time_s = 0;  // first rung
  double max_time_s = 0;  // no rung at or above it; 0: the budget, else unbounded
  int min_trials = 3;     // trials at a rung (the trial included) before it decides
};

struct DivergenceRuleConfig {
  bool enabled = false;
  bool nan = true;                       // stop on the first NaN/Inf loss
  std::optional<double> max_loss;        // smoothed loss above it
  std::optional<double> spike_factor;    // smoothed loss above factor x its running minimum
  std::optional<int64_t> max_nan_iters;  // total of Megatron's "number of nan iterations" above it
  double grace_s = 0;                    // for max_loss and spike_factor only
};

struct PatienceRuleConfig {
  bool enabled = false;
  double window_s = 0;
  double min_delta = 0;  // improvement smaller than this does not count
  double grace_s = 0;
};

// What every comparison (race, halving, median, patience, throughput; not divergence, whose NaN
// or bound is certain) waits for and how much it must see. A rule that decided on two logged
// points or 0.4 s lost the best trial of studies in other model families: early points are
// noise, and a rate over a few iterations misses the periodic stalls (checkpoints, evaluation,
// data-loader refills) that come later.
struct EvidenceConfig {
  int min_points = 10;        // finite loss points of a trial (its own and a rival's) before it is compared
  double min_fraction = 0.1;  // and axis time run, as a fraction of budget_s (no effect without a budget)
  // Loss compared at equal time only (the throughput rule's (6)), no rate involved, needs fewer: a
  // trial's loss at a time is as good as its noise says, and the margins below widen for few points.
  int min_loss_points = 5;
  // Margins are at least noise_z standard errors of the difference compared: each curve's noise
  // is measured from its own raw points (robustly, from second differences) and scaled by what
  // the smoothing leaves of it; an iteration rate's by the spread of its per-interval rates. A
  // noise measured on few points is itself uncertain, so each curve's standard error is taken
  // not noise_z times but the Student-t quantile of the same one-sided probability (noise_z = 2:
  // 97.7%) with df = its points - 1 (a rate's: intervals - 1): 2.87 at 5 points, 2.32 at 10,
  // 2.09 at 30, noise_z itself as points grow.
  double noise_z = 2;
};

struct ThroughputRuleConfig {
  bool enabled = false;
  std::vector<std::string> params;  // parameters that change speed but not loss per iteration
  int min_points = 2;               // log lines before a trial's iteration rate is trusted (and evidence's)
  double grace_s = 0;
  double rate_margin = 0.02;   // (1): a sibling this much faster (0.02 = 2%)
  double rival_speedup = 1.5;  // (2): another group's trial this many times faster; 0: off
  double margin = 0.02;        // (2), (3), (4), (5): nats of loss
  bool extrapolate = true;     // (5): its own recent descent, in a straight line, cannot catch up
  bool lead = true;            // (6): a rival lower at equal time that it is not catching up with
  // (1), with budget_s: how far ahead two siblings' rates are trusted, as a multiple of the time both were
  // observed (1: no further than observed; 9: as soon as min_fraction = 0.1 of the budget has run).
  double rate_horizon = 1;
  // Pairs of groups whose progress gap the rule keeps at once (issue 42: 10,000 trials in 2,500 groups held 4M
  // pairs, 340 MB); past it the cache starts again. Not a study setting: tests set it low to cross it.
  size_t max_cached_gaps = size_t{1} << 17;
};

struct RaceRuleConfig {
  bool enabled = false;
  double slack = 0;  // a trial may run (1 + slack) x the best time to target before it is stopped
  double grace_s = 0;
};

struct StoppingConfig {
  TimeAxis axis = TimeAxis::kTrainTime;
  Smoothing smoothing;
  // The objective is maximised ([objective] mode = "max"): the rules judge its negation, and
  // max_loss, target_loss and the values in reasons stay in the metric's own units (max_loss is
  // then the value below which a trial has diverged; spike_factor a fall below its best / factor).
  bool maximize = false;
  EvidenceConfig evidence;
  // Time on the axis at which trials are compared ("loss at the budget"); 0: none. The
  // throughput rule needs it; halving's rungs stop below it.
  double budget_s = 0;
  std::optional<double> target_loss;  // the time-to-target objective (TimeToTarget); the race rule's target
  DivergenceRuleConfig divergence;
  RaceRuleConfig race;
  HalvingRuleConfig halving;
  MedianRuleConfig median;
  PatienceRuleConfig patience;
  ThroughputRuleConfig throughput;

  bool AnyRule() const {
    return divergence.enabled || race.enabled || halving.enabled || median.enabled || patience.enabled ||
           throughput.enabled;
  }
};

}  // namespace sweep
