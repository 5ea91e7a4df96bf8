// What a trial's logged metrics say for its report entry: the final objective, the step at which
// it reaches the target, levels (TFLOP/s, tokens/s, batch size), the downsampled curve and
// telemetry. From every point of a short trial (MetricFacts), or from the store's summary of a long
// one and a few of its points (SummaryFacts), with the same final value and target step either
// way (report_data.h: kRawRowBudget). Internal to report_data.cc.
// Layer results/ (namespace sweep::results): stored trials into views; uses the store, study, planner, reports.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/final_objective.h"
#include "base/metric_point.h"
#include "base/status.h"
#include "reports/study_report.h"
#include "store/store.h"

namespace sweep::results {

// A trial's metrics as Store::MetricTable reads them: one column set per metric, sorted by name.
using Columns = std::vector<store::MetricColumns>;

// What every trial's facts are read against.
struct FactsContext {
  std::string objective;
  bool minimize = true;
  std::optional<double> target;
  size_t curve_points = 500;  // curves and telemetry series are downsampled to this many points
};

struct TrialFacts {
  std::optional<int64_t> train_iters;
  std::optional<double> tflops_per_gpu, tokens_per_s, global_batch_size;
  std::optional<FinalObjective> final;
  std::optional<int64_t> steps_to_target;
  std::vector<CurvePoint> curve;
  std::vector<reports::TrialSummary::TelemetrySeries> telemetry;  // [job] monitor = true
};

// From every point of the trial (Store::MetricTable).
TrialFacts MetricFacts(const Columns& metrics, const FactsContext& ctx);

// From the store's summary of a long trial (its objective's buckets read) and a few of its points:
// the final value from the objective's last kFinalWindow points, as MetricFacts computes it; the
// step at which the smoothed curve reaches the target for good, exactly; the curve from the bucket
// means (each the mean of store::kMinBucketPoints or more consecutive points, a wider smoothing
// than the trailing mean), from the first point to the final value; levels (TFLOP/s, tokens/s,
// batch size): the mean of the points after the first.
Result<TrialFacts> SummaryFacts(store::Store& store, int64_t trial_id, const store::TrialSummary& summary,
                                const FactsContext& ctx);

// The final objective (base/final_objective.h) of a trial that logged `objective`, from its last
// kFinalWindow points alone (the trial's last rows): what `status` shows.
Result<std::optional<FinalObjective>> FinalFromTail(store::Store& store, int64_t trial_id,
                                                    const store::TrialSummary& summary, const std::string& objective);

}  // namespace sweep::results
