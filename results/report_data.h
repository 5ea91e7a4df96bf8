// Turning what the store holds into the plain data reports/ renders: trials.csv's rows, `status`'s
// table, the HTML report's summaries (what each trial's metrics say: trial_facts.h). Writing the
// files is report_files.h's; which trials a study has, study_trials.h's. Reads only; safe while a
// run writes.
// Layer results/ (namespace sweep::results): stored trials into views; uses the store, study, planner, reports.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "reports/csv.h"
#include "reports/html_report.h"
#include "reports/study_report.h"
#include "store/store.h"
#include "study/study.h"

namespace sweep::results {

// One row per trial of the study (StudyTrials, study_trials.h), in trial id order. `now` fills the wall time of
// running trials; objective_value is the final value (base/final_objective.h) of `objective`, by
// default the study's.
Result<std::vector<reports::TrialRow>> CollectTrialRows(store::Store& store, const study::Study& study,
                                                        int64_t study_id, double now, const std::string& objective = "",
                                                        int* left_out = nullptr);

// CollectTrialRows of `trials` as they are (the run loop's own, StudyTrials already applied), their
// parameters in the order of `param_names` (ParamNames): nothing else is listed or expanded.
Result<std::vector<reports::TrialRow>> TrialRowsOf(store::Store& store, const study::Study& study, int64_t study_id,
                                                   const std::vector<store::TrialRecord>& trials,
                                                   const std::vector<std::string>& param_names, double now,
                                                   const std::string& objective = "");

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
ReportOptions ReportOptionsFor(const study::Study& study);

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
Result<reports::StudyReport> CollectReport(store::Store& store, const study::Study& study, int64_t study_id,
                                           const ReportOptions& options, double now);

// For WriteReports (report_files.h): the report and trials.csv's rows from one read of each
// trial's metrics; each trial's points are handed to `sink`, when given, as they are read, so that
// metrics.csv is streamed rather than held.
using MetricsSink = std::function<Status(const store::TrialRecord&, const std::vector<store::MetricColumns>&)>;
struct ReportData {
  reports::StudyReport report;
  std::vector<reports::TrialRow> rows;
};
Result<ReportData> CollectReportData(store::Store& store, const study::Study& study, int64_t study_id,
                                     const ReportOptions& options, double now, const MetricsSink& sink = {});

}  // namespace sweep::results
