// Early stopping: which running trials to stop, judged on loss at equal *training time*, not
// equal iteration. Pure logic with no I/O: the run loop feeds it the curves it already stored
// each tick, and bench/stopping_bench replays recorded curves through the same code.
//
// Design. Comparing trials at the same iteration is wrong when configurations differ in speed,
// and tuning speed (micro-batch size, parallelism, recompute) is the point of many sweeps. So
// every rule works on a time axis: training time since the trial's first logged iteration
// (queue wait and start-up excluded), optionally multiplied by the trial's GPU count. Raw loss
// is noisy, so rules see a smoothed curve (debiased EMA or a running mean over points), linearly
// interpolated at the times they compare. Rules are stateless: each call decides from the
// curves alone, so a restarted orchestrator decides exactly as the one that died.
//
// Repeats over seeds (TrialProgress::configuration): no rule judges a trial against its siblings, the
// other seeds of its configuration; every rule that compares takes its rivals from other configurations,
// in the same one evaluation (rules.h says where each rule does it, and what differs from judging each
// trial in a view without its siblings).
//
// Rules, evaluated in this order (a trial is stopped by the first that fires; one stopped by an
// earlier rule no longer counts as live for the later ones):
//   divergence  NaN/Inf loss, loss above a bound, NaN iterations counted by Megatron, or a
//               spike above a multiple of the running minimum.
//   race        for the time-to-target objective: once any trial's smoothed loss has reached
//               target_loss at time T, a trial that has run past T (times 1 + slack) without
//               reaching it can no longer rank first, so it is stopped. Exact for that objective:
//               it never stops the winner.
//   halving     asynchronous successive halving with rungs in time: at min_time * eta^k a trial
//               must be in the best 1/eta of the trials that reached that rung (or be the best
//               of those still live).
//   median      Vizier's median rule: the trial's running average (time-weighted mean of the
//               smoothed loss over [0, t]) is worse than the median of the other trials'
//               running averages at the same t; only trials that reached t count.
//   patience    no improvement larger than min_delta within the last window.
//   throughput  trials whose parameters differ only in throughput knobs (the study names them;
//               none: every configuration is its own group) share one loss-per-iteration curve,
//               and a trial's iteration rate is measured over its whole curve. A trial is stopped when a live rival is
//               expected to be lower at any budget: (1) a sibling (same group) at least rate_margin faster, both
//               rates observed, with budget_s, for at least the time left to it over rate_horizon (1: a
//               rate predicts no further ahead than it was observed; a periodic stall longer than
//               that has not shown yet, and before it the stalling trial looks the faster); (2) a trial
//               of another group rival_speedup times faster whose loss has fallen at least as much per iteration
//               (within margin); (3) one of another group, no slower, whose loss has fallen more than margin further
//               per iteration; (4) with budget_s, when the group's measured curve at the iteration this trial will
//               reach by the budget is worse, by margin, than what a rival will at most have there; (5) with budget_s
//               and extrapolate, when even its own recent descent, carried in a straight line to the iteration it will
//               reach by the budget, ends above that by margin: once a curve has bent (its slope per iteration no
//               longer steepening), a loss convex in the iteration stays above that line. Never further ahead than the
//               trial has been observed: early Megatron curves bend more than once, and without
//               that limit the bench lost the best trial of gpt-100it in sequential sweeps.
//               (6) with budget_s and lead, when a live rival (any group, a completed one too) is
//               lower at equal time by the margin (the rival's noise read at that time, from its points up
//               to then: a rival that ran past it has grown noisier since; issue 30), this trial's curve has bent (its
//               recent slope in time no steeper than the one before, beyond noise_z standard errors of the slopes'
//               difference: issue 30; a steepening curve is not held once the gap, already beyond the margin a
//               third of the window ago, has widened since, or, beyond its noise then, has widened by more than
//               noise since: issue 44), and the gap, closing at most at its pace over
//               the last third of the time both have run (plus noise_z standard errors of that
//               pace), would still exceed the margin at the budget; once both have reached the
//               budget, the gap measured there decides alone (nothing is left to project).
//               Decided on loss at equal time only, so it needs no rate and ignores the stall
//               window (a stall is already paid for in the loss at a time); the projection only
//               holds it back. One after another it compares the running trial with the completed
//               ones, as a median pruner would.
//               Progress per iteration (loss fallen since the first common iteration) rather than
//               level, because first losses differ by initialisation and data order alone.
// Evidence (issue 15). Replayed on Megatron-LM curves of other model families and platforms, the
// rules above lost the best trial in 30% of studies, all for decisions made before the evidence
// existed. So every comparison rule now waits for EvidenceConfig: min_points logged points and
// min_fraction of the budget, for the trial judged and for the rival or reference it is judged
// against (min_loss_points instead of min_points for (6), which compares loss at equal time and
// no rate); its margins are at least noise_z standard errors of the difference, each curve's
// noise measured from its own raw points and its standard error taken as the Student-t quantile
// of noise_z's one-sided probability with df = its points - 1 (a rate's: intervals - 1), so a
// noise measured on few points, itself uncertain, widens the margin; a sibling must be faster
// by rate_margin plus noise_z standard errors of both rates (a stall, once seen, spreads a
// rate's intervals); and another configuration is a reason to stop a trial only while it is
// lower *at equal time* by that margin, whatever the projections to the budget say (they
// decide only how far ahead it stays).
// A curve's noise is the larger of its whole curve's and its recent points' (the last third):
// losses grow noisier as they fall, and the flat early points would hide it (gpt-100it-pile's
// best trial was stopped at 56% of the budget on a 0.2 gap at equal time that its recent swings
// of 0.4 nats explain).
//
// Considered and discarded: comparing at equal iteration (the problem above); fitting a curve
// (power law) to each trial's few noisy early points and extrapolating to the budget: early
// loss is flat and noisy, and a fitted curve's extrapolation is a guess, whereas siblings'
// curves are measured and iteration rates are precise after two log lines. (5) extrapolates
// only a bound, and only once the curve has bent. For (6), replayed on the bench (issue 30): the gap's
// closing carried linearly in log time (a power law's gap closes ever slower there) cost less but
// underestimates a gap that closes at a steady pace; a straight line of the trial's own recent descent
// against a rival's measured loss at the budget lost the best trial one after another. A power law fitted
// to a bent curve predicts no lower than that line, so it was not built; and with nothing projected at all
// (stopping_bench's bound row) the studies that still spend most would cost about as much: their trials stay
// within the noise of the best, or steepen (bench/README.md).
// Issue 30's ideas, built behind switches and replayed on all six folders (bench/README.md has the table; the
// code is on branch h30-experiments): (a) a power law a + b (t - t0)^-c fitted to each curve with a residual
// bootstrap, stopping when the trial's 5% quantile at the budget is above the rival's 95% one by the margin: alone
// it cost 0.03 to 0.17 more all at once on five folders; beside the closing pace it met gpt-gb200's targets only
// by the early lead the bound row shows, and one after another lost the best on three folders (folder means up to
// 0.077 nats: a best trial that looked set to end above a completed rival, then bent again); capped to no further
// ahead than observed, it lost nothing and saved at most 0.022 one after another, nothing all at once. (b) margins
// from the noise at the current loss level (series.h). (c) the gap allowed to close as the gaps between completed
// trials closed from that time to the budget: with 2 completed trials it lost the best (0.0154 nats, other-h100),
// with 4 it saved under 0.01. None brought a missing folder nearer its evidence floor by more than 0.004 all at
// once without losing the best, so none was kept.
//
// Lower is better everywhere (a loss), unless StoppingConfig::maximize. Not thread-safe; no shared state, so one per
// thread is fine. Module stopping/ (namespace sweep::stopping): early-stopping rules; uses base/ only. This is its
// one public header; statistics.h, series.h and rules.h are internal to the module.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/metric_point.h"
#include "base/status.h"
#include "base/stopping_settings.h"
#include "stopping/trial_progress.h"

namespace sweep::stopping {

// How the rules that weigh each trial against every other find them (issue 42): kIndexed, the default,
// with what one evaluation shares across the trials judged (the median rule sweeps the curves once in
// the order of the times it judges at, and settles most trials by counting bounds in batches; the
// throughput rule looks only at the rivals that may be lower, stopping/lower_rivals.h, rule (6) at those
// that can beat the best lead found, and skips comparisons that no rival can pass); kReference, the
// same rules pair by pair, as they were written first. Both decide the same, bit for bit: kReference is kept to check
// that (stopping_state_test.cc on random studies, `stopping_tick_bench --check`, `stopping_bench --reference`).
enum class RulePath { kIndexed, kReference };

// The trials to stop now, at most one decision per trial, in the order of `trials`. Only
// kRunning trials are stopped; a trial stopped by one rule no longer counts as live for the
// rules after it, so two rivals are never both stopped for each other's sake.
std::vector<StopDecision> EvaluateStopping(const StoppingConfig& config, const std::vector<TrialProgress>& trials,
                                           RulePath path = RulePath::kIndexed);

struct Series;  // series.h

// The run loop's early stopping across ticks. Each trial's series (smoothed curve, running
// integral, noise and rate statistics) is extended by the points logged since the last call and
// never rebuilt or copied; a trial that gets no new points (ended, stopped) costs nothing to keep.
// Its decisions are EvaluateStopping's on the curves appended so far, which builds its series with
// the same code, point by point (so a state rebuilt from the stored curves after a restart is the
// one that died). Up to 1024 finite points a trial every statistic is exact; beyond, a trial's
// series keeps at most 1024 knots of the smoothed curve (every 2^k-th point and the latest) and
// histograms for its medians, about 33 KB whatever the curve's length, and 16 bytes a stall (series.h).
class StoppingState {
 public:
  explicit StoppingState(StoppingConfig config);
  ~StoppingState();
  StoppingState(const StoppingState&) = delete;
  StoppingState& operator=(const StoppingState&) = delete;

  const StoppingConfig& config() const { return config_; }
  // Whether points of the trial were appended since the start or its last Forget.
  bool Has(int64_t trial_id) const;
  // The trial's points logged after those appended so far, in step order: the objective and
  // Megatron's NaN-iteration counts. `gpus` (the gpu_time axis) is taken from the first call.
  void Append(int64_t trial_id, int gpus, const std::vector<CurvePoint>& loss,
              const std::vector<CurvePoint>& nan_iters);
  // Drops the trial's series (its points were reset, or their write rolled back).
  void Forget(int64_t trial_id);
  // Drops every series (the run loop has ended; Append builds them again from the stored curves).
  void ForgetAll();
  // EvaluateStopping(config, trials) with each trial's curves being those appended for its id;
  // the `loss` and `nan_iters` of `trials` are not read (a trial never appended has no points).
  std::vector<StopDecision> Evaluate(const std::vector<TrialProgress>& trials, RulePath path = RulePath::kIndexed);

  // What the rules see of a trial (tests, benches); nullopt without a series.
  struct View {
    std::vector<double> t;  // axis time of each knot
    std::vector<int64_t> step;
    std::vector<double> smoothed, area_to;
    size_t points = 0;  // finite points appended
    double now = 0, noise = 0, se = 0, rate_rse = 0;
    int64_t stall_period = 0;
    double min_smoothed = 0, nan_total = 0;
    bool nonfinite = false;
    std::vector<float> noise_marks;  // the noise at earlier point counts (Series::NoiseAt)
    bool operator==(const View& o) const {
      return t == o.t && step == o.step && smoothed == o.smoothed && area_to == o.area_to && points == o.points &&
             now == o.now && noise == o.noise && se == o.se && rate_rse == o.rate_rse &&
             stall_period == o.stall_period && min_smoothed == o.min_smoothed && nan_total == o.nan_total &&
             nonfinite == o.nonfinite && noise_marks == o.noise_marks;
    }
  };
  std::optional<View> Inspect(int64_t trial_id);
  // Heap bytes of every series.
  size_t MemoryBytes() const;

 private:
  StoppingConfig config_;
  std::map<int64_t, std::unique_ptr<Series>> series_;
};

// The smoothed values of `curve`, point for point; non-finite points keep their raw value and
// do not enter the average.
std::vector<double> Smooth(const std::vector<CurvePoint>& curve, const Smoothing& smoothing);

// Training time (the curve's own time_s) at which the smoothed loss first reaches `target`,
// interpolated linearly between the two points around the crossing; nullopt if it never does.
std::optional<double> TimeToTarget(const std::vector<CurvePoint>& curve, double target, const Smoothing& smoothing);

// Training time at which a trial would reach `step` at the iteration rate it has shown so far
// (its last point's time plus the remaining steps at its average rate): what a stopped trial
// would have run, for the report's GPU-hours saved. nullopt without two points with time between.
std::optional<double> ProjectedTime(const std::vector<CurvePoint>& curve, int64_t step);

}  // namespace sweep::stopping
