// What the store keeps about each metric of each trial as it ingests, so that `status`, the reports
// and a restarted run read a few rows per trial instead of every logged point: counts, first and
// last point, range, and a downsampled series (means of consecutive points).
//
// The series is a streaming decimation with a deterministic result. Points are grouped, in step
// order, into buckets of `stride` consecutive points (kMinBucketPoints to start with: a bucket
// written per 32 points of a metric keeps ingestion within 0.8 of a raw insert, bench/ingest_bench); each bucket
// keeps its step range, its last time and the sum and count of its finite values. When a trial has
// kMaxBuckets complete buckets and logs one more point, neighbouring pairs merge and the stride
// doubles. So whatever the ingestion's chunking, a metric of n points ends up with the same buckets:
// those of the smallest stride (kMinBucketPoints times a power of two) for which n / stride is at
// most kMaxBuckets, each the sum of the same points in the same order (SummarizeSeries computes it
// from scratch, and the tests compare). A 10k-point curve is ~300 bucket means (a box filter of
// 32 points), what a report chart needs; a tick writes one summary row per metric and, now and
// then, a finished bucket. With 8 points a bucket, ingestion fell to 0.62 of the raw insert.
//
// Pure logic, no SQLite: metric_writes.cc persists it (tables metric_summaries and metric_buckets).
// Module store/: uses base/ only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/final_objective.h"
#include "base/metric_point.h"

namespace sweep::store {

inline constexpr int64_t kMinBucketPoints = 32;
inline constexpr int64_t kMaxBuckets = 512;

struct SeriesBucket {
  int64_t first_step = 0, last_step = 0;
  double last_time_s = 0;  // time of its last point
  int64_t points = 0;      // points in it
  int64_t finite = 0;      // of which finite
  double sum = 0;          // of the finite values
  // Range of the smoothed curve (base/final_objective.h: the trailing mean of kFinalWindow
  // points, each window reaching back into the points before the bucket) at the bucket's points,
  // NaN left out: the curve reaches a (finite) target inside the bucket iff smooth_min <= target
  // (smooth_max >= target, maximising), so a report finds the exact crossing by reading this
  // bucket's points alone. +inf / -inf when every smoothed value is NaN.
  double smooth_min = std::numeric_limits<double>::infinity();
  double smooth_max = -std::numeric_limits<double>::infinity();
  // Mean of the finite values; NaN when none is.
  double Mean() const {
    return finite > 0 ? sum / static_cast<double>(finite) : std::numeric_limits<double>::quiet_NaN();
  }
};

// The merge of two neighbouring buckets, `a` before `b`.
SeriesBucket MergeBuckets(const SeriesBucket& a, const SeriesBucket& b);

struct MetricSummary {
  std::string name;
  int64_t points = 0;  // rows stored
  int64_t finite = 0;  // of which with a finite value
  int64_t first_step = 0, last_step = 0;
  double first_time_s = 0, first_value = 0;
  double last_time_s = 0, last_value = 0;                        // the point with the greatest step
  double max_time_s = std::numeric_limits<double>::quiet_NaN();  // NaN: no point had a time
  double sum = 0;                                                // of the finite values
  double min = std::numeric_limits<double>::infinity();          // of the finite values
  double max = -std::numeric_limits<double>::infinity();
  int64_t stride = kMinBucketPoints;  // points per complete bucket
  int64_t complete = 0;               // complete buckets (stored in metric_buckets)
  SeriesBucket open;                  // the points after them: fewer than `stride`
  // The last kFinalWindow values (raw, NaN kept, oldest first): the final value's window (so
  // `status` and the reports read no point for it: FinalFromTail), and with the next point, its
  // last kFinalWindow - 1 are the window of that point's smoothed value. A summary written before
  // issue 42 kept kFinalWindow - 1: HasFinalWindow() tells.
  std::vector<double> recent;
  // The complete buckets, in order; filled only by the readers that ask for a metric's series.
  std::vector<SeriesBucket> buckets;

  // True when the next point needs the complete buckets merged pairwise first (MergeAll).
  bool NeedsMerge() const { return complete >= kMaxBuckets; }
  // Adds a point whose step is greater than every step so far. A bucket this completes is
  // appended to `completed` (its index is complete - 1 afterwards). Call MergeAll first when
  // NeedsMerge().
  void Add(int64_t step, double time_s, double value, std::vector<SeriesBucket>& completed);
  // `all`: the kMaxBuckets complete buckets, in order. Replaces them by kMaxBuckets / 2 buckets of
  // twice the stride.
  std::vector<SeriesBucket> MergeAll(const std::vector<SeriesBucket>& all);

  // Whether `recent` holds the final value's whole window: min(points, kFinalWindow) values.
  bool HasFinalWindow() const { return recent.size() >= static_cast<size_t>(std::min<int64_t>(points, kFinalWindow)); }

  std::optional<double> Mean() const;
  // The series as points: each complete bucket's mean at its last step and time, then the open
  // bucket's if it has points. Needs `buckets`.
  std::vector<CurvePoint> Curve() const;
  // A robust steady-state level, for iteration times: the median of the bucket means with the
  // first bucket (start-up: CUDA context, compilation, warm-up) left out once there are three
  // buckets; with fewer, the mean of the points after the first (of all, below three points).
  // Needs `buckets`.
  std::optional<double> SteadyLevel() const;
};

// The summary of a metric computed from all of its points at once (in step order, distinct
// steps), buckets included: what ingestion must have arrived at, however it was chunked.
MetricSummary SummarizeSeries(std::string name, const std::vector<CurvePoint>& points);

// Every metric of a trial, by name.
struct TrialSummary {
  int64_t trial_id = 0;
  std::vector<MetricSummary> metrics;  // sorted by name

  const MetricSummary* Find(std::string_view name) const;
  int64_t rows() const;  // points of every metric
  // Of the training metrics: telemetry (base/telemetry.h) is keyed by the clock, not by step.
  int64_t max_step() const;  // 0 without points
  std::optional<double> max_time_s() const;
};

}  // namespace sweep::store
