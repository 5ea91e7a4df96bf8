// Turning what the store holds into the plain data reports/ renders (trials.csv, metrics.csv,
// the HTML report, `status`), and writing the report files; and a study's trials (ExpandStudy,
// phase 2's from phase 1's ranking). Reads only; safe while a run writes.
// Module orchestrator/: the application; may use every module.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "planner/planner.h"
#include "study/study.h"
#include "reports/csv.h"
#include "reports/html_report.h"
#include "reports/study_report.h"
#include "store/store.h"
#include "study/space.h"

namespace sweep {

// The study's trials in the store, in trial id order, without those whose [space] values are no
// longer in the study file (counted in *left_out): they are history, not candidates.
Result<std::vector<store::TrialRecord>> StudyTrials(store::Store& store, const Study& study, int64_t study_id,
                                                    int* left_out = nullptr);

// One row per trial of the study (StudyTrials), in trial id order. `now` fills the wall time of
// running trials; objective_value is the final value (base/final_objective.h) of `objective`, by
// default the study's.
Result<std::vector<reports::TrialRow>> CollectTrialRows(store::Store& store, const Study& study, int64_t study_id,
                                                        double now, const std::string& objective = "",
                                                        int* left_out = nullptr);

// CollectTrialRows of `trials` as they are (the run loop's own, StudyTrials already applied), their
// parameters in the order of `param_names` (ParamNames): nothing else is listed or expanded.
Result<std::vector<reports::TrialRow>> TrialRowsOf(store::Store& store, const Study& study, int64_t study_id,
                                                   const std::vector<store::TrialRecord>& trials,
                                                   const std::vector<std::string>& param_names, double now,
                                                   const std::string& objective = "");

std::vector<std::string> ParamNames(const Study& study);

struct ReportOptions {
  // The configuration the others are compared with: a trial key ("t-0123456789ab") or a JSON
  // object of parameter values ({"lr": 0.01, "optimizer": "adam"}; each given key must match, a
  // number may be given as text). Empty: no baseline, and so no speedup (the report says why).
  std::string baseline;
  // Objective value that counts as reached. Default: the baseline's smoothed final value; with no
  // completed baseline, the worst smoothed final value among completed trials.
  std::optional<double> target;
  std::string version;  // slurmsweep version, shown in the report
  reports::HtmlOptions html;
  // A trial with more metric rows than this is reported from the store's summary of its metrics
  // (CollectReport) instead of every point. Default: kRawRowBudget / trials with curves, at least
  // 1000. 0: every trial from its summary (tests compare the two).
  std::optional<int64_t> raw_row_budget;
};

// The options a study's [report] table asks for (baseline, target), with this binary's version.
ReportOptions ReportOptionsFor(const Study& study);

// Per-trial curves are downsampled so that all of them together stay near this many points per
// chart (between 50 and 500 per trial): 1000 trials of 10k points make a report of a few MB.
inline constexpr size_t kCurvePointBudget = 100'000;

// A report reads about this many metric rows at most, beyond the summaries: the trials longer
// than their share are drawn from the store's summaries. Final values (the last kFinalWindow
// points) and steps to target (the points of the last bucket where the smoothed curve may not be
// past the target) are the same as from every point; the curves are the means of the store's buckets of
// 32 or more points instead of the trailing mean of 10, from the first point to the final value;
// TFLOP/s, tokens/s and batch size are the mean of the points after the first (from the summary
// row: no bucket read) instead of the median of every point. The iteration time is the summary's
// steady level for every trial (store::MetricSummary::SteadyLevel).
inline constexpr int64_t kRawRowBudget = 1'000'000;

// The HTML report's data: every trial summarised, baseline and target chosen.
Result<reports::StudyReport> CollectReport(store::Store& store, const Study& study, int64_t study_id,
                                           const ReportOptions& options, double now);

// Writes the HTML report to `html_path` and trials.csv and metrics.csv into `csv_dir` (created if
// missing); either may be empty, not both. Each file is written beside its final name, made
// mode 0644 and renamed, so a reader (or a browser refreshing it) never sees half a file. The run
// loop calls this every few minutes; it reads each trial's metrics once.
Status WriteReports(store::Store& store, const Study& study, int64_t study_id, const std::string& html_path,
                    const std::string& csv_dir, double now, const ReportOptions& options = {});

// Two-phase studies. Phase 1 screens the throughput knobs (micro-batch size, parallelism,
// recompute, precision) with short runs; phase 2 is a study of its own whose [search] seed_from
// names phase 1: its trials are phase 1's top configurations, each crossed with phase 2's
// [space] (the convergence knobs: optimizer, learning rate), raced with early stopping on loss
// versus time and ranked by time to target. Each phase is an ordinary study (its own database,
// report and resume); the link is read once, when phase 2 expands its trials. Here, beside the
// report's data, because phase 1's ranking is its report's, and a report lists only the trials
// the study file (phase 2: over phase 1's seeds) still expands to.
//
// The seeds of `study`: phase 1's top configurations, best first, or one empty seed when the
// study has no seed_from. Phase 1 must have run to the end (kFailedPrecondition otherwise).
Result<std::vector<Params>> SeedConfigs(const Study& study);

// Reads phase 2's seeds (SeedConfigs) and phase 1's parameter names once, into study.seeds, so
// that SeedConfigs, ExpandStudy, ParamNames and the report's trial list no longer read phase 1's
// files. Why phase 1 cannot seed yet is kept there, not returned: commands that need the trials
// fail with it, the others (status, cancel) go on. The application calls this after LoadStudy.
Status ResolveSeeds(Study& study);

// ExpandSpace over SeedConfigs: every caller that turns a study file into trials uses this.
Result<std::vector<TrialSpec>> ExpandStudy(const Study& study);

// What the planner (planner/planner.h) reads of the study: [job.vars], nodes and GPUs per node.
PlanJob PlanJobOf(const Study& study);

}  // namespace sweep
