// The study file's [stopping] table read into early stopping's StoppingConfig: the rules in
// stopping/ stay pure logic and never see TOML. Uses base/ and toml++.
#pragma once

#include <string>
#include <vector>

#include <toml++/toml.h>

#include "base/status.h"
#include "base/stopping_settings.h"

namespace sweep::study {

// Reads the study file's [stopping] table (`table`, from `path`). Errors are
// "PATH:LINE: key 'stopping.x.y': what"; unknown keys are refused with the closest known key
// suggested. With `parameters` (the study's parameter names) non-empty, throughput.params must
// name some of them.
//
// Keys (times are seconds on the chosen axis; a rule is on when its table is present; with no
// rule table at all, [stopping] means divergence (NaN) + throughput with no declared knobs, the
// set stopping_bench measures against issue 15's targets):
//   [stopping]             axis = "train_time" | "gpu_time" (train time x the trial's GPUs)
//                          smoothing = "ema" (default) | "running_mean" | "none"
//                          ema_alpha = 0.3 (weight of the newest point), window = 5 (points)
//                          budget_s = training time at which trials are compared
//                          target_loss = loss for the time-to-target objective
//                          min_points = 10, min_fraction = 0.1 (of budget_s), noise_z = 2: the
//                          evidence every comparison waits for (stopping/early_stop.h);
//                          min_loss_points = 5: for loss at equal time alone (throughput (6))
//   [stopping.divergence]  nan = true, max_loss, spike_factor (e.g. 10), max_nan_iters, grace_s
//   [stopping.race]        slack = 0, grace_s = 0 (needs target_loss)
//   [stopping.halving]     eta = 3, min_time_s (required), max_time_s (default budget_s),
//                          min_trials = 3
//   [stopping.median]      grace_s = 0, min_trials = 3, quantile = 0.5
//   [stopping.patience]    window_s (required), min_delta = 0, grace_s = 0
//   [stopping.throughput]  params = ["tp", "pp", "mbs", ...] (required), grace_s = 0,
//                          min_points = 2, rate_margin = 0.02, rate_horizon = 1,
//                          rival_speedup = 1.5 (0: off),
//                          margin = 0.02, extrapolate = true, lead = true
Result<StoppingConfig> ParseStoppingConfig(const toml::table& table, const std::string& path,
                                           const std::vector<std::string>& parameters = {});

}  // namespace sweep::study
