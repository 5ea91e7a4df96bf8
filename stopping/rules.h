// What the stopping rules share during one evaluation (Context), and the rules themselves, each a
// pass over the trials that stops some of them (early_stop.h describes them). Internal to stopping/:
// early_stop.cc runs them in order; rules.cc holds divergence, race, halving, median and patience,
// throughput_rule.cc the throughput rule.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/stopping_settings.h"
#include "stopping/curve_floor.h"
#include "stopping/trial_progress.h"
#include "stopping/series.h"

namespace sweep::stopping {

// Repeats over seeds (TrialProgress::configuration): a trial is never judged against its siblings,
// the other seeds of its configuration. Every rule that weighs a trial against others takes them from
// other configurations only (Rival): race's winner, halving's ranking at a rung and the best live trial
// there, the median rule's others, each of the throughput rule's rivals; and a group's curve per
// iteration, pooled for a prediction or a progress gap, leaves the judged trial's siblings out. So one
// evaluation decides for each trial as the view of the study without its siblings would
// (stopping_group_test.cc checks it on random studies), but for two things no such view sees: a trial
// stopped earlier in the same evaluation no longer counts as a live rival (as without repeats, and
// not as in another trial's view); and the stall period that the evidence for rates waits for is the
// longest any trial showed, siblings included (it only ever holds a comparison back).

// Shared by the rules during one evaluation.
struct Context {
  const StoppingConfig& config;
  const std::vector<TrialProgress>& trials;
  // Each trial's series, not copied: the caller's (StoppingState) or built for this evaluation.
  struct SeriesList {
    std::vector<const Series*> of;
    const Series& operator[](size_t i) const { return *of[i]; }
    size_t size() const { return of.size(); }
  } series;
  // Floors under the curves (curve_floor.h) on the indexed path (RulePath::kIndexed), for passing over
  // rivals that cannot be lower; null on the reference path, which compares every pair in full.
  const CurveFloors* floors;
  std::vector<bool> live;     // running or completed, and not stopped during this evaluation
  std::vector<bool> decided;  // stopped during this evaluation
  std::vector<StopDecision> decisions;
  int64_t stall_period = 0;  // the longest any trial has shown
  // Per trial: its configuration as a number (TrialProgress::configuration; a number of its own when
  // empty), and the trials of each configuration. Siblings are never each other's rivals.
  std::vector<size_t> kin = {};
  std::vector<std::vector<size_t>> kin_members = {};
  // Trial j may be weighed against trial i: it is of another configuration (so neither i nor a sibling).
  bool Rival(size_t i, size_t j) const { return kin[i] != kin[j]; }
  // Trial j is a sibling of trial i: another repeat of its configuration.
  bool Sibling(size_t i, size_t j) const { return j != i && kin[i] == kin[j]; }
  bool HasSiblings(size_t i) const { return kin_members[kin[i]].size() > 1; }
  // Per trial: noise_z as a Student-t quantile for its loss noise (df = points - 1) and for its
  // rate's spread (df = intervals - 1), so a curve of few points gets a wider margin.
  std::vector<double> z_loss = {}, z_rate = {};
  // A curve's standard error, and its rate's relative one, times that quantile.
  double Se(size_t i) const { return z_loss[i] * series[i].se; }
  double Noise(size_t i) const { return z_loss[i] * series[i].noise; }
  double RateSe(size_t i) const { return z_rate[i] * series[i].rate_rse; }
  // Se(i) at axis time `at`: from the noise of its points up to then (Series::NoiseAt), its quantile
  // and what smoothing leaves of it read at that many points; Se(i) itself at or past its end.
  StudentT* student = nullptr;  // noise_z's quantiles, memoised for the evaluation
  double SeAt(size_t i, double at) const {
    const Series& s = series[i];
    if (student == nullptr || s.empty() || at >= s.last_t()) return Se(i);
    auto [noise, n] = s.NoiseAt(at);
    return (*student)(n > 0 ? n - 1 : 0) * noise * SmoothedFraction(config.smoothing, n);
  }

  bool Candidate(size_t i) const {
    return trials[i].phase == TrialPhase::kRunning && !decided[i] && !series[i].empty();
  }
  // Trial i has shown enough to be compared, or to be compared with: min_points finite points
  // and min_fraction of the budget run. A completed trial's curve is all there will be.
  bool Evident(size_t i) const { return evident[i]; }
  // EvidentNow of each trial, at the start of the evaluation (it does not change during one).
  std::vector<bool> evident = {};
  bool EvidentNow(size_t i) const {
    return Shown(i, config.evidence.min_points) && (trials[i].phase == TrialPhase::kCompleted ||
                                                    series[i].step.back() - series[i].step.front() >= 2 * stall_period);
  }
  // Trial i has `points` finite points and min_fraction of the budget, or has completed.
  bool Shown(size_t i, int points) const {
    const Series& s = series[i];
    if (s.empty()) return false;
    if (trials[i].phase == TrialPhase::kCompleted) return true;
    if (static_cast<int>(s.points) < points) return false;
    return config.budget_s <= 0 || s.last_t() >= config.evidence.min_fraction * config.budget_s;
  }
  // Enough to compare its loss at equal time with another's: min_loss_points and min_fraction, but
  // not the stall window, which is for rates (a stall is already paid for in a curve's loss at a time).
  bool LossEvident(size_t i) const { return loss_evident[i]; }
  std::vector<bool> loss_evident = {};
  bool LossEvidentNow(size_t i) const { return Shown(i, config.evidence.min_loss_points); }
  // What a difference between smoothed values of trials i and j must exceed: `floor`, and
  // noise_z standard errors of that difference (each curve's read as a Student-t quantile).
  double Margin(size_t i, size_t j, double floor = 0) const { return std::max(floor, std::hypot(Se(i), Se(j))); }
  // A value the rules judged, in the metric's own units (the rules see its negation when maximised).
  double User(double v) const { return config.maximize ? -v : v; }
  mutable std::vector<size_t> all_ = {}, live_list_ = {};
  mutable bool live_stale_ = true;
  mutable size_t stopped_since_ = 0;
  // The trials a rule that takes only live rivals looks at, in order: every trial on the reference path;
  // on the indexed path those live when last asked (a few may have been stopped since: the rule still
  // checks live), so that at 10,000 trials of which most were stopped earlier in the evaluation, a
  // trial judged is not walked past all of them.
  const std::vector<size_t>& MaybeLive() const {
    if (floors == nullptr) {
      if (all_.size() != trials.size()) {
        all_.resize(trials.size());
        for (size_t j = 0; j < all_.size(); ++j) all_[j] = j;
      }
      return all_;
    }
    if (live_stale_) {
      live_list_.clear();
      for (size_t j = 0; j < live.size(); ++j) {
        if (live[j]) live_list_.push_back(j);
      }
      live_stale_ = false;
      stopped_since_ = 0;
    }
    return live_list_;
  }
  void Stop(size_t i, std::string rule, std::string reason, double value, double threshold, int refs) {
    // The list of MaybeLive is rebuilt once enough of it has gone (each rebuild walks every trial).
    if (++stopped_since_ * 4 > live_list_.size() + 64) live_stale_ = true;
    decided[i] = true;
    live[i] = false;
    decisions.push_back({trials[i].id, std::move(rule), std::move(reason), series[i].now, value, threshold, refs});
  }
};

// Numbers and names as reasons show them.
std::string Num(double v);
// How a reason names another trial: its key when the caller gave one (what status and the
// report show), else its id.
std::string Name(const TrialProgress& t);
std::string Secs(double v);

void Divergence(Context& c);
void Race(Context& c);
void Halving(Context& c);
void Median(Context& c);
// The median rule as Median decides it, with the others' running averages read by one sweep over the
// trials' times instead of a search in each curve per pair (median_sweep.cc): the evaluation's
// default; Median is the reference it is checked against (RulePath).
void MedianBySweep(Context& c);
// What both share: the evident trials' latest times, latest first; the time trial i is judged at, if
// it is judged; and the verdict, given the others' running averages at that time and the sum of their
// standard errors (`may_skip`: decide "stays" by counting the others below the bar when that settles it).
std::vector<std::pair<double, size_t>> MedianLatest(const Context& c);
std::optional<double> MedianTime(const Context& c, size_t i, const std::vector<std::pair<double, size_t>>& latest);
void MedianJudge(Context& c, size_t i, double at, std::vector<double>& others, double se, bool may_skip);
void Patience(Context& c);
// Last, so that the rivals it stops trials for are known to live on.
void Throughput(Context& c);

}  // namespace sweep::stopping
