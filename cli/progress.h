// Progress of a study for the status views (`run`'s live block, `status`, `status --watch`, --json):
// trials done/running/queued/failed, the best objective so far and its trial, elapsed time, an
// ETA, GPU-hours used. Pure: trial facts and a time in, numbers and text out, so the ETA is tested
// with a fake clock.
//
// The ETA is a small schedule, not a rate times a count: each running trial finishes after its
// remaining iterations at its own rate (Megatron's train_iters and the logged iteration time),
// or, where either is unknown, after the median duration of the completed trials less what it
// has run; each queued trial then takes the earliest free slot of max_concurrent for that
// median duration (or, before any trial completed, for the mean full-run time of the running
// trials whose rate and total are known). The ETA is when the last slot frees. While Slurm holds
// some of the study's jobs pending beside fewer than max_concurrent running, the cluster is the
// bound: the slots are the trials running now (at least one). Unknown (null)
// while a trial has no estimate at all: nothing is guessed.
// Layer cli/ (namespace sweep::cli): the command line; parses, calls run/ and results/, prints.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace sweep::cli {

// What `status` knows about one trial; collected from the store by cli/status_view.h.
struct ProgressTrial {
  std::string key;
  std::string state;                   // as stored (base/trial_state.h)
  int64_t steps = 0;                   // last logged step
  std::optional<int64_t> total_steps;  // the run's total iterations, when the log says
  std::optional<double> iters_per_s;   // steady-state rate
  std::optional<double> started_at;    // this attempt's start (Unix seconds)
  std::optional<double> ended_at;      // its end, once ended
  std::optional<double> run_s;         // every attempt's run time (the cost): wall_time_s
  std::optional<double> objective;     // the value `status` shows for the trial
};

struct ProgressOptions {
  std::string objective;  // metric name, for the text
  bool minimize = true;
  int max_concurrent = 1;  // slots of the ETA's schedule
  int gpus_per_trial = 0;  // nodes x gpus_per_node; 0: CPU jobs, no GPU-hours shown
  // The trials the study's budget makes when its sampler proposes them as results come in (tpe:
  // [search] trials configurations x repeats); 0 when every trial is stored before the run (grid,
  // random). While a trial is open, those not proposed yet count in the total and the ETA.
  int budget = 0;
  // Seeds per configuration: with repeats the best line names the best single seed, since the
  // recommendation is a configuration by its mean (status's configurations, the report).
  int repeats = 1;
};

struct Progress {
  int total = 0;                                 // every trial but those dropped by a constraint
  int completed = 0, failed = 0, cancelled = 0;  // ended (cancelled includes pruned)
  int pruned = 0;                                // cancelled by a stopping rule
  int running = 0, queued = 0;                   // queued: not submitted yet, submitting or pending
  int dropped = 0;
  int to_propose = 0;  // of the budget, not proposed yet (counted in total, not in queued)
  int done() const { return completed + failed + cancelled; }
  double percent() const { return total > 0 ? 100.0 * done() / total : 100.0; }

  std::optional<std::string> best_trial;  // its key
  std::string best_state;
  double best_value = 0;

  double elapsed_s = 0;         // first start to now (to the last end once every trial ended)
  std::optional<double> eta_s;  // seconds from now; 0 once every trial ended
  std::string eta_basis;        // how the ETA was made, or why there is none
  double gpu_hours = 0;
};

Progress ComputeProgress(const std::vector<ProgressTrial>& trials, const ProgressOptions& options, double now);

// "42s", "12m05s", "3h05m", "2d04h".
std::string FormatDuration(double seconds);

// The block `run` keeps on a terminal (and `status` prints above its table): three lines, each
// with its line break.
std::string RenderProgressBlock(const Progress& p, const ProgressOptions& options);

// One line for pipes and logs: counts, best, elapsed, ETA, GPU-hours; with its line break.
std::string RenderProgressLine(const Progress& p, const ProgressOptions& options);

// What, when it changes, is worth a new line on a pipe: the counts and the best trial and value
// (not the elapsed time or the ETA, which change every tick).
std::string ProgressChangeKey(const Progress& p);

// The "progress" and "best" members of the --json documents (README: JSON schemas).
nlohmann::json ProgressJson(const Progress& p);
nlohmann::json BestJson(const Progress& p, const ProgressOptions& options);

}  // namespace sweep::cli
