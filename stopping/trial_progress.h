// What the stopping rules are given (a trial's phase, parameters and curves) and what they decide.
// Part of the module's face: early_stop.h includes it; the rules (rules.h) need only this, so the
// headers include each other in one direction.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/metric_point.h"

namespace sweep::stopping {

// The rules' points (base/metric_point.h): time_s is training time since the trial's first
// logged iteration, as stored; the rules multiply it by the GPU count when axis = gpu_time.
enum class TrialPhase {
  kRunning,    // may be stopped
  kCompleted,  // ran to its end: a reference, and a live competitor at the budget
  kStopped,    // ended early (pruned, cancelled, failed): its curve is still evidence
};

struct TrialProgress {
  int64_t id = 0;
  std::string name;  // how reasons name it ("t-0123456789ab"); empty: by id
  TrialPhase phase = TrialPhase::kRunning;
  int gpus = 1;
  // Parameter values as text; the throughput rule groups trials by those it is not told to ignore.
  std::vector<std::pair<std::string, std::string>> params;
  // The configuration this trial repeats (another seed of it, `[search] repeats`): trials with the
  // same non-empty configuration are siblings, and no rule judges a trial against its siblings; a
  // rival is always of another configuration. Empty: a configuration of its own.
  std::string configuration;
  std::vector<CurvePoint> loss;       // the objective metric (lm_loss or loss), ordered by step
  std::vector<CurvePoint> nan_iters;  // Megatron's per-interval NaN iteration counts, if logged
};

struct StopDecision {
  int64_t trial_id = 0;
  std::string rule;          // "divergence", "race", "halving", "median", "patience", "throughput"
  std::string reason;        // one line with the numbers that decided it
  double at_s = 0;           // the trial's time on the axis when decided
  double value = 0;          // the trial's number that was judged (smoothed loss, average, prediction)
  double threshold = 0;      // what it was compared with (median, rung cut-off, bound, rival's loss)
  int reference_trials = 0;  // trials the comparison used
};

}  // namespace sweep::stopping
