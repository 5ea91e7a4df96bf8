// The HTML report's input and the analysis on it: which configuration to recommend, how much
// faster it reaches the target than the baseline (throughput factor × convergence factor =
// time-to-target factor), the ranking, and what the sweep cost. Plain data in, plain data out:
// results/report_data.cc fills StudyReport from the store; html_report.cc renders it.
//
// Definitions (stated in the report too):
//   throughput       = iterations per second, 1000 / median iter_time_ms of the trial
//   final value      = base/final_objective.h: mean of the objective's last kFinalWindow logged
//                      points; the same trailing mean at every point is the smoothed curve
//   steps to target  = the step where that smoothed curve crosses the target for the last time,
//                      interpolated between the logged points it crosses between (it stays at or
//                      past the target from there on: base/final_objective.h's SustainedReach and
//                      InterpolatedCrossing, filled in by report_data.cc); a trial whose final
//                      value is the target reaches it
//   time to target   = steps to target / throughput (steady-state; start-up time is not counted)
//   throughput factor  = recommended iter/s / baseline iter/s
//   convergence factor = baseline steps to target / recommended steps to target
//   time-to-target factor = baseline time to target / recommended time to target
//                         = throughput factor × convergence factor (exactly, by these definitions)
// Module reports/: rendering plain data into reports; uses base/ only. A public header (the internal
// ones say "Internal to reports/").
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/final_objective.h"
#include "base/metric_point.h"
#include "base/params.h"
#include "base/trial_state.h"
#include "reports/config_ranking.h"

namespace sweep::reports {

// A value that is there and neither NaN nor infinite.
inline bool Finite(const std::optional<double>& v) { return v && std::isfinite(*v); }

// A point of a (downsampled) objective curve.
using CurvePoint = sweep::CurvePoint;  // base/metric_point.h

// One trial, its metrics already summarised (see the definitions above).
struct TrialSummary {
  int64_t id = 0;
  std::string key;
  std::vector<ParamCell> param_values;  // same order as StudyMeta::param_names
  std::string state;                    // store state: "completed", "out_of_memory", ...
  std::string reason, exit_code, job_id;
  std::optional<double> queue_s;       // started - submitted
  std::optional<double> wall_s;        // ended (or now, if running) - started
  int64_t steps = 0;                   // last logged step of any metric
  std::optional<int64_t> train_iters;  // the run's length, when the log says ("iteration N/ M")
  std::optional<double> train_time_s;
  std::optional<double> final_value;           // FinalObjectiveOf: the smoothed objective at its end
  std::optional<double> final_spread;          // sample sd of the points final_value averages
  size_t final_points = 0;                     // how many (kFinalWindow, or fewer for a short trial)
  std::optional<double> last_value;            // the objective's last logged point, raw
  std::optional<double> started_at, ended_at;  // Unix seconds (Slurm's start and end)
  std::optional<int64_t> steps_to_target;
  std::optional<double> iters_per_s;
  std::optional<double> tokens_per_s;
  std::optional<double> tflops_per_gpu;  // median of the throughput_tflops metric
  std::optional<double> mfu;             // model FLOPs utilisation, 0..1, when the study gives the peak
  std::vector<CurvePoint> curve;         // smoothed objective, downsampled for the charts
  // Telemetry ([job] monitor = true, base/telemetry.h): each system/... metric the trial has,
  // downsampled, against seconds since the trial's first sample; and the memory planner's predicted
  // peak per GPU for its configuration (studies that name a model).
  struct TelemetrySeries {
    std::string name;  // "system/gpu0/mem_used_gib"
    std::vector<double> t_s, values;
  };
  std::vector<TelemetrySeries> telemetry;
  std::optional<double> predicted_gpu_mem_gib;
};

// What the study is for, which decides the headline, from the measured speed (ClassifyBySpeed): a
// performance study is one whose configurations' throughputs differ by kSpeedDiffers or more (the
// fastest against the slowest), whatever its parameters are called: the headline leads with time
// to target and splits it into throughput x convergence. A hyperparameter study's configurations
// all run within that of each other: the headline is the best final value, its uncertainty and the
// gap to the runner-up. Before two configurations have a measured speed, the study's own words
// decide (rank_by_time_to_target, [stopping.throughput] params, parameter names that usually
// change the speed: IsThroughputKnob), and the basis says the speed is not measured yet.
enum class StudyKind { kPerformance, kHyperparameter };

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
  std::vector<bool> param_log;  // same order: sampled on a log scale (a [space] range with log = true)
  StudyKind kind = StudyKind::kPerformance;
  std::string kind_basis;   // why, for the reader: "micro_batch_size changes the speed"
  int trials_left_out = 0;  // trials of earlier versions of the study file whose values left [space]
  // Trials whose curve was drawn from the store's bucket means (long trials, see
  // results/report_data.h's kRawRowBudget), which the definitions then mention.
  int curves_from_buckets = 0;
  bool monitor = false;  // [job] monitor = true: the report has a telemetry section
};

struct StudyReport {
  StudyMeta meta;
  std::vector<TrialSummary> trials;  // trial id order
  std::optional<size_t> baseline;    // index into trials
  std::string baseline_note;         // why there is none, or how it was chosen
  bool baseline_named = false;       // the study (or the caller) named it (CollectReport sets no other)
  std::optional<double> target;      // objective value that counts as "reached"
  std::string target_basis;          // how the target was chosen, for the reader
  // A study with repeats: its configurations ranked by their mean over seeds (repeats.h).
  std::optional<ConfigRanking> configs;
};

// Trial outcome classes used for colours, counts and costs.
using Outcome = TrialOutcome;  // base/trial_state.h: each state's class
Outcome OutcomeOf(const std::string& state);
// Short label of a state for the table: "completed", "OOM", "timeout", "node failure", ...
std::string StateLabel(const std::string& state);

// Parameter names that change a training job's speed rather than what it learns (Megatron's
// parallelism and batching knobs): the guess before any speed is measured.
bool IsThroughputKnob(const std::string& param);

inline constexpr double kSpeedDiffers = 1.10;
// The spread of speed between configurations (trials, without repeats): fastest / slowest mean
// iterations per second. nullopt with fewer than two measured.
struct SpeedSpread {
  double fastest = 0, slowest = 0;  // iter/s
  int measured = 0;                 // configurations (or trials) with a throughput
  double Factor() const { return fastest / slowest; }
};
std::optional<SpeedSpread> MeasureSpeedSpread(const StudyReport& report);
// Sets report.meta.kind and kind_basis from the measured spread (see StudyKind). `guess`: the kind
// and basis the study's words give, used while fewer than two speeds are measured.
void ClassifyBySpeed(StudyReport& report, StudyKind guess, const std::string& guess_basis);

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

// How much of the spread of the trials' values each parameter explains alone.
// Method (epsilon-squared of a one-way analysis of variance): the trials are grouped by the
// parameter's value (a numeric parameter with more than 6 distinct values, or with fewer than 2
// trials per value on average: in 2 to 5 groups of equal count by rank, n / 4 of them, which is
// the same on a log scale); epsilon^2 = (SS_between - (k - 1) x SS_within / (n - k)) / SS_total,
// the between-group share of the variance corrected for what k groups explain by chance, clipped
// at 0; `share` normalises them to sum to 1, as Optuna's get_param_importances does. Main effects
// only, like fANOVA's single-parameter terms. A parameter whose groups cannot carry an estimate
// (one value, or fewer than 2 trials per group on average: each trial its own group explains
// everything by construction) is not estimable, which is not the same as explaining nothing.
// Which values: the completed trials' final values when no trial stopped early. Trials stopped
// early (pruned, cancelled) stopped because they were losing, so leaving them out would hide the
// very effect that stopped them (a pruned low learning rate): with any, every trial is compared at
// equal step instead, by its smoothed objective (the curve the report draws) at `at_step`, the
// last step that every compared trial reached. A trial stopped before a quarter of the completed
// trials' median length is left out and counted (`stopped_left_out`): comparing all at its step
// would compare the start of training. Running and failed trials are left out and counted too.
struct ParamImportance {
  size_t param = 0;        // index into StudyMeta::param_names
  double epsilon2 = 0;     // 0..1 (0 when not estimable)
  double share = 0;        // epsilon2 / sum over parameters (0 when all are 0)
  int groups = 0;          // k
  bool by_rank = false;    // a numeric parameter grouped by rank (else one group per value)
  bool estimable = false;  // k >= 2 and n >= 2k
};
// A study with repeats is compared over configurations, not trials: each configuration's value is
// the mean of its repeats' values (as above), so n is the number of configurations (its seeds are
// not independent draws of the parameters) and the seed is no parameter. Over the units compared,
// the Spearman rank correlation of each pair of numeric parameters is measured: a sampler such as
// tpe draws parameters together, and a parameter correlated with another (|rho| >= 0.5) may show
// the other's effect; those pairs are listed so that the report says so.
struct ParamCorrelation {
  size_t a = 0, b = 0;  // indices into StudyMeta::param_names
  double rho = 0;       // Spearman's rank correlation over the compared units
};
inline constexpr double kCorrelatedDraws = 0.5;
struct Importances {
  std::vector<ParamImportance> params;  // estimable ones largest share first, then the others
  int trials = 0;                       // n: units compared (trials, or configurations), completed and stopped early
  int configurations = 0;               // > 0: the units are this many configurations (a study with repeats)
  std::vector<ParamCorrelation> correlated;  // pairs with |rho| >= kCorrelatedDraws, strongest first
  int stopped = 0;                           // of them, stopped early (pruned, cancelled)
  std::optional<int64_t> at_step;            // set when `stopped` > 0: the values are from this step
  int stopped_left_out = 0;                  // stopped early with a value, before `min_step`: left out
  int64_t min_step = 0;                      // a quarter of the completed trials' median last step
  int running_left_out = 0;                  // still running, with a value: left out
  int failed_left_out = 0;                   // failed (timeout, OOM, node failure, ...) with a value: left out
  std::string why_none;                      // set when there are too few trials to say
};
Importances ParamImportances(const StudyReport& report);
// Spearman's rank correlation of two equally long columns (0 below 3 values or for a constant one).
double SpearmanRho(const std::vector<double>& x, const std::vector<double>& y);

// Best final value so far against the resources spent so far: trials in the order they ended,
// each adding its GPU-hours (every ended trial, pruned and failed ones too); the best value
// among completed trials ended by then.
struct BestSoFarPoint {
  double hours = 0;            // cumulative, at this trial's end
  std::optional<double> best;  // best final value so far (none before the first result)
  size_t trial = 0;            // the trial that ended here
  bool improved = false;       // this trial set a new best
};
std::vector<BestSoFarPoint> BestSoFar(const StudyReport& report);

// A configuration's speed over its repeats (a study with repeats): the mean throughput of its
// repeats that logged one, and the mean steps to target of its completed repeats that reached the
// target; time to target = that mean steps / that mean throughput, so that the decomposition's
// product holds for configurations as it does for trials.
struct ConfigSpeed {
  std::optional<double> iters_per_s;
  std::optional<double> steps_to_target;
  int reached = 0, completed = 0;  // completed repeats that reached the target, of those completed
  std::optional<double> time_to_target;
};

struct Analysis {
  std::vector<size_t> ranking;  // every trial, best first (see Rank in study_report.cc)
  // The recommendation and the runner-up. A study with repeats decides between configurations
  // (StudyReport::configs): recommended_config and runner_up_config are the best two of its
  // ranking (by time to target when the study ranks so), and recommended / runner_up are their
  // typical trial (the completed repeat whose final value is nearest the mean), which the charts
  // draw. Without repeats, each trial is its own configuration.
  std::optional<size_t> recommended;  // first completed trial of the ranking with a value
  std::optional<size_t> runner_up;    // the next one (another configuration)
  std::optional<size_t> recommended_config, runner_up_config, baseline_config;  // into configs->groups
  std::vector<ConfigSpeed> config_speed;                                        // same order as configs->groups
  // The recommendation against the baseline configuration: Welch's test of their means.
  std::optional<Separability> versus_baseline;
  std::optional<size_t> fastest;         // shortest time to target among completed trials
  std::optional<size_t> fastest_config;  // the same among configurations (repeats)
  // Recommended vs baseline, when both reach the target: trials, or configurations (ConfigSpeed).
  std::optional<Decomposition> decomposition;
  CostSummary cost;
  bool gpu = true;  // resource hours are GPU-hours (else CPU-hours)
};

// Hours of GPUs (or CPUs) a trial held: wall time × nodes × GPUs per node (× CPUs per task).
std::optional<double> ResourceHours(const TrialSummary& trial, const StudyMeta& meta);
std::optional<double> TimeToTarget(const TrialSummary& trial);
// Factors of `candidate` over `baseline`; nullopt unless both have throughput and reach the target.
std::optional<Decomposition> Decompose(const TrialSummary& candidate, const TrialSummary& baseline);
std::optional<Decomposition> Decompose(const ConfigSpeed& candidate, const ConfigSpeed& baseline);
// Each configuration's speed (configs->groups' order); empty without configurations.
std::vector<ConfigSpeed> ConfigSpeeds(const StudyReport& report);

Analysis Analyze(const StudyReport& report);

}  // namespace sweep::reports
