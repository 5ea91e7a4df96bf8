// Summaries of each trial's metrics for reports and `status`, and the writing of the report
// files; see report_data.h.
#include "orchestrator/report_data.h"

#include "planner/parallelism.h"
#include "planner/planner.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <tuple>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/clock.h"
#include "base/final_objective.h"
#include "base/telemetry.h"
#include "base/trial_state.h"
#include "orchestrator/config_groups.h"
#include "reports/lttb.h"
#include "study/repeats.h"

namespace sweep {
namespace {

namespace fs = std::filesystem;

std::optional<double> Median(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string JsonScalarToString(const nlohmann::json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_null()) return "";
  return j.dump();
}

nlohmann::json ParseParams(const std::string& params_json) {
  auto params = nlohmann::json::parse(params_json, nullptr, false);
  return params.is_object() ? params : nlohmann::json::object();
}

// A stored parameter value (JSON) as the study file would have given it.
ParamValue FromJson(const nlohmann::json& v) {
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) return v.get<std::string>();
  return v.dump();
}

// A stored trial as the planner reads a configuration: its values in `names`' order.
TrialSpec SpecOfTrial(const store::TrialRecord& t, const std::vector<std::string>& names) {
  TrialSpec spec;
  spec.key = t.trial_key;
  spec.params_json = t.params_json;
  nlohmann::json params = ParseParams(t.params_json);
  for (const auto& name : names) {
    if (params.contains(name)) spec.params.emplace_back(name, FromJson(params[name]));
  }
  return spec;
}

// A trial's metrics as Store::MetricTable reads them: one column set per metric, sorted by name.
using Columns = std::vector<store::MetricColumns>;

// One metric's points in step order; empty if the trial did not log it.
const store::MetricColumns& SeriesOf(const Columns& metrics, std::string_view name) {
  static const store::MetricColumns kNone;
  auto it = std::lower_bound(metrics.begin(), metrics.end(), name,
                             [](const store::MetricColumns& c, std::string_view n) { return c.name < n; });
  return it != metrics.end() && it->name == name ? *it : kNone;
}

std::vector<double> FiniteValues(const Columns& metrics, std::string_view name) {
  const std::vector<double>& values = SeriesOf(metrics, name).values;
  std::vector<double> v;
  v.reserve(values.size());
  for (double x : values) {
    if (std::isfinite(x)) v.push_back(x);
  }
  return v;
}

// The trial's own columns: everything but what its metrics say (TrialRowFromSummary adds that).
reports::TrialRow MakeTrialRow(const store::TrialRecord& t, const nlohmann::json& params,
                               const std::vector<std::string>& param_names, double now) {
  reports::TrialRow r;
  r.trial_id = t.id;
  r.trial_key = t.trial_key;
  for (const auto& name : param_names)
    r.param_values.push_back(params.contains(name) ? JsonScalarToString(params[name]) : "");
  r.state = t.state;
  r.reason = t.reason;
  // Asked to stop (pruned, or `slurmsweep cancel`) but not yet seen ending: only the run loop
  // records the end, so say what is under way.
  if (!t.stop_request.empty() && !IsFinalTrialState(t.state)) r.reason = "stopping: " + t.stop_request;
  r.job_id = t.job_id;
  r.exit_code = t.exit_code;
  // Every attempt's run time: a trial retried after a node failure cost both jobs.
  if (t.started_at) r.wall_time_s = (t.ended_at ? *t.ended_at : now) - *t.started_at + t.prior_run_s;
  else if (t.prior_run_s > 0) r.wall_time_s = t.prior_run_s;
  return r;
}

// The final objective (base/final_objective.h) of a trial that logged `objective`, from its last
// kFinalWindow points alone (read through the store's index by metric).
Result<std::optional<FinalObjective>> FinalFromTail(store::Store& store, int64_t trial_id,
                                                    const store::TrialSummary& summary, const std::string& objective) {
  if (!summary.Find(objective)) return std::optional<FinalObjective>();
  auto tail = store.MetricTail(trial_id, objective, kFinalWindow);
  if (!tail.ok()) return tail.status();
  return FinalObjectiveOf(*tail);
}

// MakeTrialRow from the store's summary of the trial's metrics instead of its points: steps and
// training time are the same; the final objective is FinalFromTail's; the iteration time is the
// summary's steady level (store::MetricSummary::SteadyLevel: the median of its bucket means,
// start-up left out), not the median of every point.
reports::TrialRow TrialRowFromSummary(const store::TrialRecord& t, const nlohmann::json& params,
                                      const store::TrialSummary& summary, const std::optional<FinalObjective>& final,
                                      const std::vector<std::string>& param_names, double now) {
  reports::TrialRow r = MakeTrialRow(t, params, param_names, now);
  if (final) r.objective_value = final->value;
  r.steps = summary.max_step();
  r.train_time_s = summary.max_time_s();
  if (const store::MetricSummary* m = summary.Find("iter_time_ms")) {
    auto level = m->SteadyLevel();
    if (level && *level > 0) {
      r.median_iter_time_ms = level;
      r.iters_per_s = 1000.0 / *level;
    }
  }
  return r;
}

// What every trial's summary needs from the study and the report options.
struct SummaryContext {
  std::string objective;
  bool minimize = true;
  std::optional<double> target;
  size_t curve_points = 500;
  std::optional<double> seq_length;  // from [job.vars], unless a parameter gives it per trial
  // MFU: the model (a planner preset named by [job.vars] model) and the GPU's dense peak TFLOP/s
  // ([job.vars] peak_tflops, and peak_tflops_fp8 for trials whose precision starts with fp8).
  std::optional<ModelPreset> model;
  std::optional<double> peak_tflops, peak_tflops_fp8;
  int gpus = 0;
  // The memory planner's predicted peak per GPU, by trial key ([job] monitor with a model).
  std::map<std::string, double> predicted_gib;
};

// The trial's telemetry series (base/telemetry.h): each downsampled to `points`, on seconds since
// the trial's first sample. `series`: name, steps (Unix seconds), values.
using RawSeries = std::tuple<std::string, std::vector<int64_t>, std::vector<double>>;
std::vector<reports::TrialSummary::TelemetrySeries> TelemetryOf(const std::vector<RawSeries>& series, size_t points) {
  std::vector<reports::TrialSummary::TelemetrySeries> out;
  std::optional<int64_t> first;
  for (const auto& [name, steps, values] : series) {
    if (!steps.empty()) first = std::min(first.value_or(steps.front()), steps.front());
  }
  for (const auto& [name, steps, values] : series) {
    if (steps.empty()) continue;
    std::vector<double> x;
    x.reserve(steps.size());
    for (int64_t step : steps) x.push_back(static_cast<double>(step - *first));
    reports::TrialSummary::TelemetrySeries s;
    s.name = name;
    for (size_t k : reports::LttbIndices(x, values, points)) {
      s.t_s.push_back(x[k]);
      s.values.push_back(values[k]);
    }
    out.push_back(std::move(s));
  }
  return out;
}

// From every point (Store::MetricTable).
std::vector<reports::TrialSummary::TelemetrySeries> TelemetryOf(const Columns& metrics, size_t points) {
  std::vector<RawSeries> series;
  for (const auto& m : metrics) {
    if (IsTelemetryMetric(m.name)) series.emplace_back(m.name, m.steps, m.values);
  }
  return TelemetryOf(series, points);
}

// From the store's bucket means of a long trial's telemetry (one read of the trial's summary).
Result<std::vector<reports::TrialSummary::TelemetrySeries>> TelemetryOf(store::Store& store, int64_t trial_id,
                                                                        const store::TrialSummary& summary,
                                                                        size_t points) {
  std::vector<std::string> names;
  for (const auto& m : summary.metrics) {
    if (IsTelemetryMetric(m.name)) names.push_back(m.name);
  }
  if (names.empty()) return std::vector<reports::TrialSummary::TelemetrySeries>();
  auto full = store.Summary(trial_id, names);
  if (!full.ok()) return full.status();
  std::vector<RawSeries> series;
  for (const auto& name : names) {
    const store::MetricSummary* m = full->Find(name);
    if (!m) continue;
    RawSeries r{name, {}, {}};
    for (const CurvePoint& p : m->Curve()) {
      std::get<1>(r).push_back(p.step);
      std::get<2>(r).push_back(p.value);
    }
    series.push_back(std::move(r));
  }
  return TelemetryOf(series, points);
}

std::optional<double> NumberOf(const nlohmann::json& j) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    try {
      size_t used = 0;
      double v = std::stod(j.get<std::string>(), &used);
      if (used == j.get<std::string>().size()) return v;
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

// What a trial's metrics say for its report entry, from its points (MetricFacts) or, for a long
// trial, from the store's summary of them (SummaryFacts).
struct Facts {
  std::optional<int64_t> train_iters;
  std::optional<double> tflops_per_gpu, tokens_per_s, global_batch_size;
  std::optional<FinalObjective> final;
  std::optional<int64_t> steps_to_target;
  std::vector<CurvePoint> curve;
  std::vector<reports::TrialSummary::TelemetrySeries> telemetry;  // [job] monitor = true
};

// Downsamples a curve's finite points with LTTB to `budget` points (all kept if fewer).
std::vector<CurvePoint> Downsample(const std::vector<CurvePoint>& curve, size_t budget) {
  // A diverged tail ends the line: finite points only.
  std::vector<double> x, y;
  std::vector<size_t> finite;
  for (size_t i = 0; i < curve.size(); ++i) {
    if (!std::isfinite(curve[i].value)) continue;
    finite.push_back(i);
    x.push_back(static_cast<double>(curve[i].step));
    y.push_back(curve[i].value);
  }
  std::vector<CurvePoint> out;
  for (size_t k : reports::LttbIndices(x, y, budget)) out.push_back(curve[finite[k]]);
  return out;
}

// From every point of the trial (Store::MetricTable).
Facts MetricFacts(const Columns& metrics, const SummaryContext& ctx) {
  Facts f;
  if (auto total = FiniteValues(metrics, "train_iters"); !total.empty())
    f.train_iters = static_cast<int64_t>(total.back());
  f.tflops_per_gpu = Median(FiniteValues(metrics, "throughput_tflops"));
  f.tokens_per_s = Median(FiniteValues(metrics, "tokens_per_s"));
  f.global_batch_size = Median(FiniteValues(metrics, "global_batch_size"));
  f.telemetry = TelemetryOf(metrics, ctx.curve_points);
  const store::MetricColumns& objective = SeriesOf(metrics, ctx.objective);
  f.final = FinalObjectiveOf(objective.values);
  if (!f.final) return f;
  // One smoothed curve (base/final_objective.h): the target is crossed on it, the charts draw
  // it, and its last point is the final value, so a trial reaches a target equal to its own
  // final value. Its window is the same number of points for every trial.
  std::vector<double> smoothed = TrailingMean(objective.values);
  if (ctx.target) {
    auto reached = SustainedReach(smoothed, *ctx.target, ctx.minimize);
    if (reached) f.steps_to_target = objective.steps[*reached];
  }
  // Downsampling raw noisy points would draw the noise's envelope.
  std::vector<CurvePoint> curve(smoothed.size());
  for (size_t i = 0; i < smoothed.size(); ++i) curve[i] = {objective.steps[i], objective.times[i], smoothed[i]};
  f.curve = Downsample(curve, ctx.curve_points);
  return f;
}

// The level of a metric of a long trial from its summary row alone (its buckets are not read):
// the mean of its finite points after the first (start-up), what Median of every point is for a
// short trial. Over the hundreds of points of a long trial, a few slow iterations (warm-up, a
// checkpoint) move it by their share only.
std::optional<double> LevelOf(const store::TrialSummary& summary, std::string_view name) {
  const store::MetricSummary* m = summary.Find(name);
  if (!m || m->finite == 0) return std::nullopt;
  if (m->points < 3 || m->finite < 2 || !std::isfinite(m->first_value)) return m->sum / static_cast<double>(m->finite);
  return (m->sum - m->first_value) / static_cast<double>(m->finite - 1);
}

// SustainedReach (base/final_objective.h) on a long trial's objective from its buckets, reading
// few points: back from the last bucket, the first whose range of the smoothed curve may hold a
// point not past the target (a NaN in it or the bucket before spoils windows, so that counts too)
// is read point by point, with the kFinalWindow - 1 points before it; the crossing is the point
// after its last point not past the target. Its step, or nullopt when the last point is not past.
Result<std::optional<int64_t>> SustainedReachInBuckets(store::Store& store, int64_t trial_id, const SummaryContext& ctx,
                                                       const std::vector<store::SeriesBucket>& buckets) {
  const double target = *ctx.target;
  std::vector<int64_t> start(buckets.size() + 1, 0);  // global index of each bucket's first point
  for (size_t k = 0; k < buckets.size(); ++k) start[k + 1] = start[k] + buckets[k].points;
  const int64_t total = start.back();
  if (total == 0) return std::optional<int64_t>();
  auto may_miss = [&](size_t k) {
    const store::SeriesBucket& b = buckets[k];
    bool spoiled = b.finite < b.points || (k > 0 && buckets[k - 1].finite < buckets[k - 1].points);
    return spoiled || !(ctx.minimize ? b.smooth_max <= target : b.smooth_min >= target);
  };
  int64_t crossing = 0;  // global index of the first point of the final run past the target
  std::optional<int64_t> crossing_step;
  for (size_t k = buckets.size(); k-- > 0;) {
    if (!may_miss(k)) continue;
    const store::SeriesBucket& b = buckets[k];
    auto points = store.MetricRange(trial_id, ctx.objective, b.first_step, b.last_step, kFinalWindow - 1);
    if (!points.ok()) return points.status();
    size_t before = 0;
    std::vector<double> values;
    for (const CurvePoint& p : *points) {
      before += p.step < b.first_step;
      values.push_back(p.value);
    }
    std::vector<double> smoothed = TrailingMean(values);
    std::optional<size_t> last_miss;
    for (size_t i = smoothed.size(); i-- > before;) {
      if (!AtOrPast(smoothed[i], target, ctx.minimize)) {
        last_miss = i;
        break;
      }
    }
    // The range says the bucket may hold a miss; were it stale, the bucket before is looked at.
    if (!last_miss) continue;
    if (*last_miss + 1 < points->size()) {
      crossing = start[k] + static_cast<int64_t>(*last_miss + 1 - before);
      crossing_step = (*points)[*last_miss + 1].step;
    } else if (k + 1 < buckets.size()) {
      crossing = start[k + 1];
      crossing_step = buckets[k + 1].first_step;
    } else {
      return std::optional<int64_t>();  // the last point is not past the target
    }
    break;
  }
  // Not before a full window is behind it.
  const int64_t earliest = std::min<int64_t>(kFinalWindow, total) - 1;
  if (crossing_step && crossing >= earliest) return crossing_step;
  size_t k = 0;
  while (k + 1 < buckets.size() && start[k + 1] <= earliest) ++k;
  auto points = store.MetricRange(trial_id, ctx.objective, buckets[k].first_step, buckets[k].last_step, 0);
  if (!points.ok()) return points.status();
  size_t at = static_cast<size_t>(earliest - start[k]);
  if (at >= points->size()) return std::optional<int64_t>();
  return std::optional<int64_t>((*points)[at].step);
}

// From the store's summary of a long trial (its objective's buckets read) and a few of its points:
// the final value from the objective's last kFinalWindow points, as MetricFacts computes it; the
// step at which the smoothed curve reaches the target for good, exactly (SustainedReachInBuckets); the
// curve from the bucket means (each the mean of store::kMinBucketPoints or more consecutive
// points, a wider smoothing than the trailing mean), from the first point to the final value; levels
// (TFLOP/s, tokens/s, batch size): LevelOf.
Result<Facts> SummaryFacts(store::Store& store, int64_t trial_id, const store::TrialSummary& summary,
                           const SummaryContext& ctx) {
  Facts f;
  if (const store::MetricSummary* m = summary.Find("train_iters"); m && std::isfinite(m->last_value))
    f.train_iters = static_cast<int64_t>(m->last_value);
  f.tflops_per_gpu = LevelOf(summary, "throughput_tflops");
  f.tokens_per_s = LevelOf(summary, "tokens_per_s");
  f.global_batch_size = LevelOf(summary, "global_batch_size");
  auto telemetry = TelemetryOf(store, trial_id, summary, ctx.curve_points);
  if (!telemetry.ok()) return telemetry.status();
  f.telemetry = std::move(*telemetry);
  const store::MetricSummary* objective = summary.Find(ctx.objective);
  auto final = FinalFromTail(store, trial_id, summary, ctx.objective);
  if (!final.ok()) return final.status();
  f.final = *final;
  if (!objective || !f.final) return f;
  std::vector<store::SeriesBucket> buckets = objective->buckets;
  if (objective->open.points > 0) buckets.push_back(objective->open);
  if (ctx.target) {
    auto reached = SustainedReachInBuckets(store, trial_id, ctx, buckets);
    if (!reached.ok()) return reached.status();
    f.steps_to_target = *reached;
  }
  // Its first point is the first logged value (a window of one), as on a curve drawn from every point.
  std::vector<CurvePoint> curve = {{objective->first_step, objective->first_time_s, objective->first_value}};
  curve.reserve(buckets.size() + 2);
  for (const store::SeriesBucket& b : buckets) curve.push_back({b.last_step, b.last_time_s, b.Mean()});
  // The last point is the final value, as on a curve drawn from every point.
  if (curve.size() > 1 && curve.back().step == objective->last_step) curve.pop_back();
  curve.push_back({objective->last_step, objective->last_time_s, f.final->value});
  f.curve = Downsample(curve, ctx.curve_points);
  return f;
}

reports::TrialSummary Summarize(const store::TrialRecord& t, const nlohmann::json& params, const reports::TrialRow& row,
                                const Facts& facts, const SummaryContext& ctx) {
  reports::TrialSummary s;
  s.id = t.id;
  s.key = t.trial_key;
  s.param_values = row.param_values;
  s.state = t.state;
  s.reason = t.reason;
  s.exit_code = t.exit_code;
  s.job_id = t.job_id;
  if (t.submitted_at && t.started_at) s.queue_s = *t.started_at - *t.submitted_at;
  s.wall_s = row.wall_time_s;
  s.steps = row.steps;
  s.train_iters = facts.train_iters;
  s.train_time_s = row.train_time_s;
  s.iters_per_s = row.iters_per_s;
  s.tflops_per_gpu = facts.tflops_per_gpu;

  // Tokens: logged directly by a JSON-lines workload, or samples per iteration x sequence length.
  s.tokens_per_s = facts.tokens_per_s;
  if (!s.tokens_per_s && s.iters_per_s) {
    std::optional<double> seq = ctx.seq_length;
    for (const char* name : {"seq_length", "seq_len"}) {
      if (params.contains(name)) seq = NumberOf(params[name]).value_or(seq.value_or(0));
    }
    const std::optional<double>& batch = facts.global_batch_size;
    if (seq && *seq > 0 && batch) s.tokens_per_s = *batch * *seq * *s.iters_per_s;
  }

  // MFU against the peak the study gives: from the logged TFLOP/s per GPU when Megatron printed it
  // (--log-throughput), else from tokens/s and the model's FLOPs per token.
  std::optional<double> peak = ctx.peak_tflops;
  if (params.contains("precision") && JsonScalarToString(params["precision"]).rfind("fp8", 0) == 0 &&
      ctx.peak_tflops_fp8) {
    peak = ctx.peak_tflops_fp8;
  }
  if (peak && *peak > 0) {
    if (s.tflops_per_gpu && *s.tflops_per_gpu > 0) {
      s.mfu = *s.tflops_per_gpu / *peak;
    } else if (s.tokens_per_s && ctx.model && ctx.gpus > 0) {
      s.mfu = Mfu(*s.tokens_per_s, ctx.gpus, *ctx.model, *peak);
    }
  }

  if (t.started_at) s.started_at = *t.started_at;
  if (t.ended_at) s.ended_at = *t.ended_at;
  if (facts.final) {
    s.final_value = facts.final->value;
    s.final_spread = facts.final->spread;
    s.final_points = facts.final->points;
    s.last_value = facts.final->last;
  }
  s.steps_to_target = facts.steps_to_target;
  s.curve = facts.curve;
  s.telemetry = facts.telemetry;
  if (auto p = ctx.predicted_gib.find(t.trial_key); p != ctx.predicted_gib.end()) s.predicted_gpu_mem_gib = p->second;
  return s;
}

// The trial named by `spec` (a trial key or a JSON object of parameter values); the note says
// which rule applied, for the report's reader. Without a spec there is no baseline: a speedup over
// whichever trial happened to complete first would be a number about nothing the user chose
// (issue 31), so the report shows none and the target falls back to the worst completed value.
std::optional<size_t> FindBaseline(const std::vector<store::TrialRecord>& trials, const std::string& spec,
                                   std::string& note) {
  if (spec.empty()) {
    note = "the study names no baseline ([report] baseline = a trial key or a table of parameter values)";
    return std::nullopt;
  }
  auto wanted = nlohmann::json::parse(spec, nullptr, false);
  if (wanted.is_object()) {
    for (size_t i = 0; i < trials.size(); ++i) {
      nlohmann::json params = ParseParams(trials[i].params_json);
      bool match = true;
      for (const auto& [name, value] : wanted.items()) {
        match = match && params.contains(name) &&
                (params[name] == value || JsonScalarToString(params[name]) == JsonScalarToString(value));
      }
      if (match) {
        note = "named by the study: " + spec;
        return i;
      }
    }
  } else {
    for (size_t i = 0; i < trials.size(); ++i) {
      if (trials[i].trial_key == spec) {
        note = "named by the study: " + spec;
        return i;
      }
    }
  }
  note = "the study's baseline " + spec + " matches no trial";
  return std::nullopt;
}

}  // namespace

ReportOptions ReportOptionsFor(const Study& study) {
  ReportOptions options;
  options.baseline = study.report.baseline;
  options.target = study.report.target;
  options.version = SLURMSWEEP_VERSION;
  return options;
}

namespace {

std::string ClusterText(const ClusterSpec& c) {
  std::string s = c.transport;
  if (c.transport == "ssh") s += fmt::format(" {}{}:{}", c.user.empty() ? "" : c.user + "@", c.host, c.port);
  if (!c.partition.empty()) s += ", partition " + c.partition;
  if (!c.account.empty()) s += ", account " + c.account;
  if (!c.qos.empty()) s += ", qos " + c.qos;
  return s;
}

// Performance or hyperparameter study (reports::StudyKind), and which parameters were sampled on
// a log scale.
void ClassifyStudy(const Study& study, reports::StudyMeta& meta) {
  meta.param_log.assign(meta.param_names.size(), false);
  for (size_t i = 0; i < meta.param_names.size(); ++i) {
    for (const auto& p : study.space) {
      if (p.name == meta.param_names[i]) meta.param_log[i] = p.log;
    }
  }
  std::vector<std::string> knobs;
  for (const auto& name : meta.param_names) {
    bool named = std::find(study.stopping.throughput.params.begin(), study.stopping.throughput.params.end(), name) !=
                 study.stopping.throughput.params.end();
    if (named || reports::IsThroughputKnob(name)) knobs.push_back(name);
  }
  if (!knobs.empty()) {
    meta.kind = reports::StudyKind::kPerformance;
    meta.kind_basis = fmt::format("{} change{} the speed", fmt::join(knobs, ", "), knobs.size() == 1 ? "s" : "");
  } else if (study.objective.rank_by_time_to_target) {
    meta.kind = reports::StudyKind::kPerformance;
    meta.kind_basis = "ranked by time to target";
  } else {
    meta.kind = reports::StudyKind::kHyperparameter;
    meta.kind_basis = "no parameter changes the speed of training";
  }
}

using MetricsSink = std::function<Status(const store::TrialRecord&, const Columns&)>;

struct Collected {
  reports::StudyReport report;
  std::vector<reports::TrialRow> rows;
};

// Chooses the target: given, else the baseline's smoothed final value, else the worst smoothed
// final value among completed trials (each of which then reaches it).
Status ChooseTarget(store::Store& store, const std::vector<store::TrialRecord>& trials, const SummaryContext& ctx,
                    const ReportOptions& options, reports::StudyReport& report) {
  if (options.target) {
    report.target = options.target;
    report.target_basis = "set for this report";
    return Status::OK();
  }
  auto smoothed_final = [&](const store::TrialRecord& t) -> Result<std::optional<double>> {
    // The final value is the mean of the last kFinalWindow points: only those are read.
    auto tail = store.MetricTail(t.id, ctx.objective, kFinalWindow);
    if (!tail.ok()) return tail.status();
    auto f = FinalObjectiveOf(*tail);
    return f && std::isfinite(f->value) ? std::optional<double>(f->value) : std::nullopt;
  };
  if (report.baseline && trials[*report.baseline].state == "completed") {
    auto v = smoothed_final(trials[*report.baseline]);
    if (!v.ok()) return v.status();
    if (*v) {
      report.target = **v;
      report.target_basis =
          fmt::format("the baseline's final {} (mean of its last {} points)", ctx.objective, kFinalWindow);
      return Status::OK();
    }
  }
  int completed = 0;
  for (const auto& t : trials) {
    if (t.state != "completed") continue;
    auto v = smoothed_final(t);
    if (!v.ok()) return v.status();
    if (!*v) continue;
    ++completed;
    if (!report.target || (ctx.minimize ? **v > *report.target : **v < *report.target)) report.target = **v;
  }
  if (report.target) {
    report.target_basis = fmt::format(
        "the worst smoothed final {} among the {} completed trials, as there is no "
        "{}",
        ctx.objective, completed, report.baseline ? "completed baseline" : "baseline");
  }
  return Status::OK();
}

Result<Collected> Collect(store::Store& store, const Study& study, int64_t study_id, const ReportOptions& options,
                          double now, const MetricsSink& sink) {
  int left_out = 0;
  auto trials = StudyTrials(store, study, study_id, &left_out);
  if (!trials.ok()) return trials.status();
  Collected c;
  c.report.meta.trials_left_out = left_out;
  reports::StudyReport& report = c.report;
  reports::StudyMeta& meta = report.meta;
  meta.study_name = study.name;
  meta.generated_at = now;
  meta.version = options.version;
  meta.study_path = study.path;
  meta.study_hash = study.hash;
  meta.template_path = study.job.template_path;
  meta.cluster = ClusterText(study.cluster);
  meta.objective_metric = study.objective.metric;
  meta.minimize = study.objective.minimize;
  meta.rank_by_time_to_target = study.objective.rank_by_time_to_target;
  meta.nodes = study.job.nodes;
  meta.gpus_per_node = study.job.gpus_per_node;
  meta.cpus_per_task = study.job.cpus_per_task;
  meta.param_names = ParamNames(study);
  ClassifyStudy(study, meta);

  SummaryContext ctx;
  ctx.objective = study.objective.metric;
  ctx.minimize = study.objective.minimize;
  size_t with_curves = std::count_if(trials->begin(), trials->end(), [](const store::TrialRecord& t) {
    return t.state != "dropped" && t.state != "new";
  });
  ctx.curve_points = std::clamp<size_t>(kCurvePointBudget / std::max<size_t>(1, with_curves), 50, 500);
  for (const char* name : {"seq_length", "seq_len"}) {
    auto it = study.job.vars.find(name);
    if (it != study.job.vars.end()) ctx.seq_length = NumberOf(nlohmann::json(it->second));
  }

  auto var = [&](const char* name) -> std::optional<double> {
    auto it = study.job.vars.find(name);
    return it == study.job.vars.end() ? std::nullopt : NumberOf(nlohmann::json(it->second));
  };
  ctx.peak_tflops = var("peak_tflops");
  ctx.peak_tflops_fp8 = var("peak_tflops_fp8");
  if (auto m = study.job.vars.find("model"); m != study.job.vars.end()) ctx.model = FindModelPreset(m->second);
  ctx.gpus = study.job.nodes * study.job.gpus_per_node;
  meta.monitor = study.job.monitor;
  if (study.job.monitor && study.job.vars.count("model")) {
    // What the planner predicts per GPU, drawn beside what nvidia-smi measured: the plan of the
    // trials in the store (a tpe study's proposals are in no expansion of its space). A study the
    // planner cannot read has no prediction to show; `plan` and `run` report why.
    std::vector<TrialSpec> specs;
    for (const auto& t : *trials) specs.push_back(SpecOfTrial(t, meta.param_names));
    auto plan = PlanTrials(PlanJobOf(study), std::move(specs));
    if (plan.ok()) {
      for (const auto& row : plan->rows) {
        if (row.memory) ctx.predicted_gib[row.trial.key] = row.memory->Peak().Total() / (1024.0 * 1024.0 * 1024.0);
      }
    }
  }

  report.baseline = FindBaseline(*trials, options.baseline, report.baseline_note);
  report.baseline_named = report.baseline && !options.baseline.empty();
  SWEEP_RETURN_IF_ERROR(ChooseTarget(store, *trials, ctx, options, report));
  ctx.target = report.target;

  // Rows as `status` has them (CollectTrialRows): from the store's summaries.
  // The iteration time's series (rows) and the objective's (SummaryFacts: curve, target crossing).
  auto summaries = store.Summaries(study_id, {"iter_time_ms", ctx.objective});
  if (!summaries.ok()) return summaries.status();
  // Trials of at most this many points (all metrics) are reported from every point: a report
  // reads at most about kRawRowBudget rows, whatever the study's size.
  int64_t raw_rows = options.raw_row_budget.value_or(
      std::max<int64_t>(kRawRowBudget / static_cast<int64_t>(std::max<size_t>(1, with_curves)), 1000));
  auto next = summaries->begin();
  const store::TrialSummary none;
  for (const auto& t : *trials) {
    while (next != summaries->end() && next->trial_id < t.id) ++next;
    const store::TrialSummary& summary = next != summaries->end() && next->trial_id == t.id ? *next : none;
    nlohmann::json params = ParseParams(t.params_json);
    bool from_points = summary.rows() <= raw_rows;
    Result<std::vector<store::MetricColumns>> metrics = std::vector<store::MetricColumns>();
    // Column-wise, each column allocated once (Store::MetricTable): no name string per point.
    if (from_points || sink) metrics = store.MetricTable(t.id);
    if (!metrics.ok()) return metrics.status();
    Result<Facts> facts = Facts();
    if (from_points) facts = MetricFacts(*metrics, ctx);
    else facts = SummaryFacts(store, t.id, summary, ctx);
    if (!facts.ok()) return facts.status();
    // The same final value as CollectTrialRows reads (FinalFromTail), from the points at hand.
    c.rows.push_back(TrialRowFromSummary(t, params, summary, facts->final, meta.param_names, now));
    if (!from_points && summary.Find(ctx.objective)) ++meta.curves_from_buckets;
    report.trials.push_back(Summarize(t, params, c.rows.back(), *facts, ctx));
    if (sink) SWEEP_RETURN_IF_ERROR(sink(t, *metrics));
  }
  c.report.configs = RankStudyConfigurations(study, c.rows);  // studies with repeats (config_groups.h)
  return c;
}

}  // namespace

std::vector<std::string> ParamNames(const Study& study) {
  std::vector<std::string> names;
  // Phase 2 of a two-phase study: phase 1's winners come first in every trial (SeedConfigs).
  if (study.seeds) {
    names = study.seeds->param_names;
  } else if (study.seed_from) {
    auto phase1 = LoadStudy(study.seed_from->study_path);
    if (phase1.ok()) {
      for (const auto& p : phase1->space) names.push_back(p.name);
    }
  }
  for (const auto& p : study.space) names.push_back(p.name);
  if (Seeded(study)) names.push_back(study.seed_var);  // the last of a repeat's params (study/repeats.h)
  return names;
}

Result<std::vector<store::TrialRecord>> StudyTrials(store::Store& store, const Study& study, int64_t study_id,
                                                    int* left_out) {
  auto trials = store.ListTrials(study_id);
  if (!trials.ok()) return trials.status();
  if (left_out) *left_out = 0;
  // Trials are keyed by their [space] values: one whose values left the study file is history,
  // not a candidate. Kept all when the file cannot be expanded (a phase 2 whose phase 1 cannot be
  // read) or matches none of them (not the file that made them).
  auto specs = ExpandStudy(study);
  if (!specs.ok()) return trials;
  std::set<std::string> keys;
  for (const auto& spec : *specs) keys.insert(spec.key);
  for (const auto& spec : StoredRepeats(study, *specs, *trials)) keys.insert(spec.key);  // run --repeat-top's
  if (std::none_of(trials->begin(), trials->end(),
                   [&](const store::TrialRecord& t) { return keys.count(t.trial_key); })) {
    return trials;
  }
  auto gone = std::remove_if(trials->begin(), trials->end(),
                             [&](const store::TrialRecord& t) { return !keys.count(t.trial_key); });
  if (left_out) *left_out = static_cast<int>(trials->end() - gone);
  trials->erase(gone, trials->end());
  return trials;
}

Result<std::vector<reports::TrialRow>> CollectTrialRows(store::Store& store, const Study& study, int64_t study_id,
                                                        double now, const std::string& objective, int* left_out) {
  auto trials = StudyTrials(store, study, study_id, left_out);
  if (!trials.ok()) return trials.status();
  const std::string& metric = objective.empty() ? study.objective.metric : objective;
  // What ingestion kept per trial and metric (two queries, then per trial one for the iteration
  // time's series and one for the objective's last kFinalWindow points): no other point is read,
  // however long the trials ran.
  auto summaries = store.Summaries(study_id, {"iter_time_ms"});
  if (!summaries.ok()) return summaries.status();
  std::vector<std::string> param_names = ParamNames(study);
  std::vector<reports::TrialRow> rows;
  rows.reserve(trials->size());
  auto next = summaries->begin();
  const store::TrialSummary none;
  for (const auto& t : *trials) {
    while (next != summaries->end() && next->trial_id < t.id) ++next;
    const store::TrialSummary& s = next != summaries->end() && next->trial_id == t.id ? *next : none;
    auto final = FinalFromTail(store, t.id, s, metric);
    if (!final.ok()) return final.status();
    rows.push_back(TrialRowFromSummary(t, ParseParams(t.params_json), s, *final, param_names, now));
  }
  return rows;
}

Result<reports::StudyReport> CollectReport(store::Store& store, const Study& study, int64_t study_id,
                                           const ReportOptions& options, double now) {
  auto c = Collect(store, study, study_id, options, now, nullptr);
  if (!c.ok()) return c.status();
  return std::move(c->report);
}

Status WriteReports(store::Store& store, const Study& study, int64_t study_id, const std::string& html_path,
                    const std::string& csv_dir, double now, const ReportOptions& options) {
  if (html_path.empty() && csv_dir.empty()) return Status::InvalidArgument("no report file asked for");
  std::unique_ptr<AtomicFile> metrics_csv;
  MetricsSink sink;
  std::string buffer;
  if (!csv_dir.empty()) {
    std::error_code ec;
    fs::create_directories(csv_dir, ec);
    if (ec) return Status::IOError(fmt::format("cannot create {}: {}", csv_dir, ec.message()));
    metrics_csv = std::make_unique<AtomicFile>((fs::path(csv_dir) / "metrics.csv").string());
    if (!metrics_csv->ok()) return Status::IOError("cannot write into " + csv_dir);
    buffer = reports::MetricsCsvHeader();
    // Streamed trial by trial: a large study has more points than we want in memory as text.
    sink = [&](const store::TrialRecord& t, const Columns& metrics) {
      // Metric by metric, each in step order (the order Store::Metrics gives).
      for (const store::MetricColumns& c : metrics) {
        for (size_t i = 0; i < c.steps.size(); ++i) {
          reports::AppendMetricsCsvRow(t.id, t.trial_key, c.steps[i], c.times[i], c.name, c.values[i], buffer);
        }
      }
      if (buffer.size() > (1 << 20)) {
        metrics_csv->Append(buffer);
        buffer.clear();
        if (!metrics_csv->ok()) return Status::IOError("cannot write metrics.csv in " + csv_dir);
      }
      return Status::OK();
    };
  }
  auto c = Collect(store, study, study_id, options, now, sink);
  if (!c.ok()) return c.status();

  if (metrics_csv) {
    metrics_csv->Append(buffer);
    AtomicFile trials_csv((fs::path(csv_dir) / "trials.csv").string());
    trials_csv.Append(reports::RenderTrialsCsv(c->report.meta.param_names, c->rows));
    SWEEP_RETURN_IF_ERROR(trials_csv.Commit());
    AtomicFile importance_csv((fs::path(csv_dir) / "importance.csv").string());
    importance_csv.Append(reports::RenderImportanceCsv(c->report));
    SWEEP_RETURN_IF_ERROR(importance_csv.Commit());
    if (c->report.configs) {
      AtomicFile configs_csv((fs::path(csv_dir) / "configs.csv").string());
      configs_csv.Append(reports::RenderConfigsCsv(*c->report.configs, c->rows));
      SWEEP_RETURN_IF_ERROR(configs_csv.Commit());
    }
    SWEEP_RETURN_IF_ERROR(metrics_csv->Commit());
  }
  if (!html_path.empty()) {
    AtomicFile html(html_path);
    html.Append(reports::RenderHtmlReport(c->report, options.html));
    SWEEP_RETURN_IF_ERROR(html.Commit());
  }
  return Status::OK();
}

// ---- two-phase studies: phase 2's trials from phase 1's report ----

Status ResolveSeeds(Study& study) {
  if (!study.seed_from) return Status::OK();
  study.seeds.reset();
  Study::Seeds seeds;
  auto configs = SeedConfigs(study);
  if (configs.ok()) seeds.configs = std::move(*configs);
  else seeds.status = configs.status();
  seeds.param_names = ParamNames(study);
  seeds.param_names.resize(seeds.param_names.size() - study.space.size());
  study.seeds = std::move(seeds);
  return Status::OK();
}

Result<std::vector<Params>> SeedConfigs(const Study& study) {
  if (!study.seed_from) return std::vector<Params>{Params{}};
  if (study.seeds) {
    if (!study.seeds->status.ok()) return study.seeds->status;
    return study.seeds->configs;
  }
  const Study::SeedFrom& seed = *study.seed_from;
  std::string where = fmt::format("{}:{}: search.seed_from", study.path, seed.line);
  auto phase1 = LoadStudy(seed.study_path);
  if (!phase1.ok()) return phase1.status().WithContext(where);
  for (const auto& p : phase1->space) {
    for (const auto& own : study.space) {
      if (own.name == p.name) {
        return Status::InvalidArgument(fmt::format(
            "{}: parameter '{}' is in both studies; phase 2's [space] must hold only the knobs phase 1 did not vary",
            where, p.name));
      }
    }
  }
  auto db = store::Store::OpenReadOnly(phase1->database);
  if (!db.ok()) {
    return Status::FailedPrecondition(fmt::format("{}: phase 1 ({}) has no results yet: run it first ({})", where,
                                                  seed.study_path, db.status().message()));
  }
  auto rec = (*db)->GetStudy(phase1->name);
  if (!rec.ok())
    return Status::FailedPrecondition(fmt::format("{}: phase 1 study '{}' has not run", where, phase1->name));
  auto trials = (*db)->ListTrials(rec->id);
  if (!trials.ok()) return trials.status();
  // "new" trials are unfinished too: IsFinalTrialState says so.
  size_t open = std::count_if(trials->begin(), trials->end(),
                              [](const store::TrialRecord& t) { return !IsFinalTrialState(t.state); });
  if (open > 0) {
    return Status::FailedPrecondition(
        fmt::format("{}: phase 1 study '{}' has {} trial(s) not ended yet; phase 2 starts from its final ranking",
                    where, phase1->name, open));
  }

  Study ranked = *phase1;
  ranked.objective.rank_by_time_to_target = seed.by == "time_to_target";
  // `now` only fills running trials' wall time, and phase 1 has none left: the ranking does not
  // depend on it, so no clock is injected this deep.
  auto report = CollectReport(**db, ranked, rec->id, ReportOptionsFor(ranked), SystemClock().Now());
  if (!report.ok()) return report.status();
  reports::Analysis a = reports::Analyze(*report);
  std::vector<size_t> order;
  for (size_t i : a.ranking) {
    const reports::TrialSummary& t = report->trials[i];
    if (t.state != "completed") continue;
    if (seed.by == "iters_per_s"      ? !t.iters_per_s
        : seed.by == "time_to_target" ? !reports::TimeToTarget(t)
                                      : !(t.final_value && std::isfinite(*t.final_value))) {
      continue;
    }
    order.push_back(i);
  }
  if (seed.by == "iters_per_s") {
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return *report->trials[x].iters_per_s > *report->trials[y].iters_per_s;
    });
  }
  if (order.empty()) {
    return Status::FailedPrecondition(
        fmt::format("{}: no completed trial of phase 1 study '{}' has a {} to rank by", where, phase1->name, seed.by));
  }
  order.resize(std::min(order.size(), static_cast<size_t>(seed.top)));

  std::vector<Params> seeds;
  for (size_t i : order) {
    const std::string& key = report->trials[i].key;
    auto t =
        std::find_if(trials->begin(), trials->end(), [&](const store::TrialRecord& r) { return r.trial_key == key; });
    nlohmann::json params = nlohmann::json::parse(t->params_json, nullptr, false);
    Params p;
    for (const auto& spec : phase1->space) {
      if (params.is_object() && params.contains(spec.name)) p.emplace_back(spec.name, FromJson(params[spec.name]));
    }
    seeds.push_back(std::move(p));
  }
  return seeds;
}

Result<std::vector<TrialSpec>> ExpandStudy(const Study& study) {
  auto seeds = SeedConfigs(study);
  if (!seeds.ok()) return seeds.status();
  return ExpandSpace(study, *seeds);
}

PlanJob PlanJobOf(const Study& study) {
  PlanJob job;
  job.vars = study.job.vars;
  job.nodes = study.job.nodes;
  job.gpus_per_node = study.job.gpus_per_node;
  return job;
}

}  // namespace sweep
