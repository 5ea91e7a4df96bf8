// The HTML report's input and the analysis on it: which configuration to recommend, how much
// faster it reaches the target than the baseline (throughput factor × convergence factor =
// time-to-target factor), the ranking, and what the sweep cost. Plain data in, plain data out:
// orchestrator/report_data.cc fills StudyReport from the store; html_report.cc renders it.
//
// Definitions (stated in the report too):
//   throughput       = iterations per second, 1000 / median iter_time_ms of the trial
//   smoothed value   = trailing mean of the objective over the last SmoothingWindow(n) logged points
//                      (the final value, the charts)
//   steps to target  = first logged step at which the objective, smoothed as the study's [stopping]
//                      says (EMA by default, the same for every trial whatever its length; filled
//                      in by report_data.cc), reaches the target
//   time to target   = steps to target / throughput (steady-state; start-up time is not counted)
//   throughput factor  = recommended iter/s / baseline iter/s
//   convergence factor = baseline steps to target / recommended steps to target
//   time-to-target factor = baseline time to target / recommended time to target
//                         = throughput factor × convergence factor (exactly, by these definitions)
// Module reports/: rendering plain data into reports; uses base/ only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/metric_point.h"
#include "base/trial_state.h"

namespace sweep::reports {

// A point of a (downsampled) objective curve.
using CurvePoint = sweep::CurvePoint;  // base/metric_point.h

// One trial, its metrics already summarised (see the definitions above).
struct TrialSummary {
  int64_t id = 0;
  std::string key;
  std::vector<std::string> param_values;  // same order as StudyMeta::param_names
  std::string state;                      // store state: "completed", "out_of_memory", ...
  std::string reason, exit_code, job_id;
  std::optional<double> queue_s;       // started - submitted
  std::optional<double> wall_s;        // ended (or now, if running) - started
  int64_t steps = 0;                   // last logged step of any metric
  std::optional<int64_t> train_iters;  // the run's length, when the log says ("iteration N/ M")
  std::optional<double> train_time_s;
  std::optional<double> final_value;     // objective at its last logged step
  std::optional<double> smoothed_final;  // smoothed objective at its last logged step
  std::optional<int64_t> steps_to_target;
  std::optional<double> iters_per_s;
  std::optional<double> tokens_per_s;
  std::optional<double> tflops_per_gpu;  // median of the throughput_tflops metric
  std::optional<double> mfu;             // model FLOPs utilisation, 0..1, when the study gives the peak
  std::vector<CurvePoint> curve;         // smoothed objective, downsampled for the charts
};

struct StudyMeta {
  std::string study_name;
  double generated_at = 0;  // Unix seconds
  std::string version;      // slurmsweep version
  std::string study_path, study_hash, template_path;
  std::string cluster;  // "ssh root@host:22, partition debug"
  std::string objective_metric = "lm_loss";
  bool minimize = true;
  bool rank_by_time_to_target = false;  // else by the final objective value
  int nodes = 1, gpus_per_node = 0, cpus_per_task = 0;
  std::vector<std::string> param_names;
  int trials_left_out = 0;  // trials of earlier versions of the study file whose values left [space]
};

struct StudyReport {
  StudyMeta meta;
  std::vector<TrialSummary> trials;  // trial id order
  std::optional<size_t> baseline;    // index into trials
  std::string baseline_note;         // why there is none, or how it was chosen
  std::optional<double> target;      // objective value that counts as "reached"
  std::string target_basis;          // how the target was chosen, for the reader
};

// Trial outcome classes used for colours, counts and costs.
using Outcome = TrialOutcome;  // base/trial_state.h: each state's class
Outcome OutcomeOf(const std::string& state);
// Short label of a state for the table: "completed", "OOM", "timeout", "node failure", ...
std::string StateLabel(const std::string& state);

// Window of the trailing mean: a tenth of the logged points, 1 to 50.
size_t SmoothingWindow(size_t points);
// The smoothed curve: at each point, the mean of the last SmoothingWindow(n) points up to it
// (fewer at the start). A NaN spoils only the windows that contain it.
std::vector<double> Smoothed(const std::vector<double>& values);
// Smoothed value at the last point; nullopt for no points.
std::optional<double> SmoothedFinal(const std::vector<double>& values);
// Index of the first point whose smoothed value reaches `target` (<= when minimising), given the
// smoothed curve.
std::optional<size_t> FirstReach(const std::vector<double>& smoothed, double target, bool minimize);

struct Decomposition {
  double throughput = 0;      // recommended iter/s ÷ baseline iter/s
  double convergence = 0;     // baseline steps ÷ recommended steps to target
  double time_to_target = 0;  // throughput × convergence
};

struct CostSummary {
  double resource_hours = 0;  // GPU-hours, or CPU-hours when the study has no GPUs
  double completed_hours = 0, failed_hours = 0, cancelled_hours = 0, running_hours = 0;
  int with_queue_time = 0;
  double queue_total_s = 0, queue_median_s = 0, queue_max_s = 0;
  struct FailureClass {
    std::string label;  // StateLabel
    int trials = 0;
    double hours = 0;
  };
  std::vector<FailureClass> failures;  // by class, most frequent first
  // Early stopping: trials in state "pruned", and an estimate of the hours they would still have
  // used had they run as long as the median completed trial.
  int pruned = 0;
  double pruned_saved_hours = 0;
};

struct Analysis {
  std::vector<size_t> ranking;                 // every trial, best first (see Rank in study_report.cc)
  std::optional<size_t> recommended;           // first completed trial of the ranking with a value
  std::optional<size_t> fastest;               // shortest time to target among completed trials
  std::optional<Decomposition> decomposition;  // recommended vs baseline, when both reach the target
  CostSummary cost;
  bool gpu = true;  // resource hours are GPU-hours (else CPU-hours)
};

// Hours of GPUs (or CPUs) a trial held: wall time × nodes × GPUs per node (× CPUs per task).
std::optional<double> ResourceHours(const TrialSummary& trial, const StudyMeta& meta);
std::optional<double> TimeToTarget(const TrialSummary& trial);
// Factors of `candidate` over `baseline`; nullopt unless both have throughput and reach the target.
std::optional<Decomposition> Decompose(const TrialSummary& candidate, const TrialSummary& baseline);

Analysis Analyze(const StudyReport& report);

}  // namespace sweep::reports
