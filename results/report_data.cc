// The store's rows turned into the plain data reports/ renders: trials.csv's rows, `status`'s
// table and the HTML report's summaries; see report_data.h.
#include "results/report_data.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "base/final_objective.h"
#include "base/params_text.h"
#include "base/trial_state.h"
#include "results/configurations.h"
#include "results/phases.h"
#include "results/study_trials.h"
#include "results/trial_facts.h"
#include "planner/planner.h"

namespace sweep::results {
namespace {

// A stored trial as the planner reads a configuration: its values in `names`' order.
TrialSpec SpecOfTrial(const store::TrialRecord& t, const std::vector<std::string>& names) {
  TrialSpec spec;
  spec.key = t.trial_key;
  spec.params_json = t.params_json;
  spec.params = t.Values(names);
  return spec;
}

// The trial's own columns: everything but what its metrics say (TrialRowFromSummary adds that).
reports::TrialRow MakeTrialRow(const store::TrialRecord& t, const std::vector<std::string>& param_names, double now) {
  reports::TrialRow r;
  r.trial_id = t.id;
  r.trial_key = t.trial_key;
  r.param_values = t.Cells(param_names);
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

// training time are the same; the final objective is FinalFromTail's; the iteration time is the
// summary's steady level (store::MetricSummary::SteadyLevel: the median of its bucket means,
// start-up left out), not the median of every point.
reports::TrialRow TrialRowFromSummary(const store::TrialRecord& t, const store::TrialSummary& summary,
                                      const std::optional<FinalObjective>& final,
                                      const std::vector<std::string>& param_names, double now) {
  reports::TrialRow r = MakeTrialRow(t, param_names, now);
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

// What every trial's summary needs from the study and the report options: what its metrics are
// read against (trial_facts.h), and what turns them into tokens/s, MFU and predicted memory.
struct SummaryContext : FactsContext {
  std::optional<double> seq_length;  // from [job.vars], unless a parameter gives it per trial
  // MFU: the model (a planner preset named by [job.vars] model) and the GPU's dense peak TFLOP/s
  // ([job.vars] peak_tflops, and peak_tflops_fp8 for trials whose precision starts with fp8).
  std::optional<planner::ModelPreset> model;
  std::optional<double> peak_tflops, peak_tflops_fp8;
  int gpus = 0;
  // The memory planner's predicted peak per GPU, by trial key ([job] monitor with a model).
  std::map<std::string, double> predicted_gib;
};

// A [job.vars] value, or a parameter given as text, read as a number: template variables are
// text by nature ("2048").
std::optional<double> NumberOfText(const std::string& text) {
  try {
    size_t used = 0;
    double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// A parameter's value as a number: integers and floats as they are, text read as a number.
std::optional<double> NumberOf(const ParamCell& cell) {
  if (cell.value && std::holds_alternative<std::string>(*cell.value)) return NumberOfText(cell.text);
  return cell.Number();
}

// The trial's value of parameter `name`, when the study has that parameter and the trial a value.
const ParamCell* CellOf(const std::vector<std::string>& names, const std::vector<ParamCell>& cells,
                        std::string_view name) {
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end() || static_cast<size_t>(it - names.begin()) >= cells.size()) return nullptr;
  const ParamCell& cell = cells[it - names.begin()];
  return cell.value ? &cell : nullptr;
}

reports::TrialSummary Summarize(const store::TrialRecord& t, const std::vector<std::string>& param_names,
                                const reports::TrialRow& row, const TrialFacts& facts, const SummaryContext& ctx) {
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
      if (const ParamCell* cell = CellOf(param_names, row.param_values, name))
        seq = NumberOf(*cell).value_or(seq.value_or(0));
    }
    const std::optional<double>& batch = facts.global_batch_size;
    if (seq && *seq > 0 && batch) s.tokens_per_s = *batch * *seq * *s.iters_per_s;
  }

  // MFU against the peak the study gives: from the logged TFLOP/s per GPU when Megatron printed it
  // (--log-throughput), else from tokens/s and the model's FLOPs per token.
  std::optional<double> peak = ctx.peak_tflops;
  const ParamCell* precision = CellOf(param_names, row.param_values, "precision");
  if (precision && precision->text.rfind("fp8", 0) == 0 && ctx.peak_tflops_fp8) {
    peak = ctx.peak_tflops_fp8;
  }
  if (peak && *peak > 0) {
    if (s.tflops_per_gpu && *s.tflops_per_gpu > 0) {
      s.mfu = *s.tflops_per_gpu / *peak;
    } else if (s.tokens_per_s && ctx.model && ctx.gpus > 0) {
      s.mfu = planner::Mfu(*s.tokens_per_s, ctx.gpus, *ctx.model, *peak);
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
  if (IsParamsText(spec)) {
    for (size_t i = 0; i < trials.size(); ++i) {
      if (trials[i].HoldsValues(spec)) {
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

ReportOptions ReportOptionsFor(const study::Study& study) {
  ReportOptions options;
  options.baseline = study.report.baseline;
  options.target = study.report.target;
  options.version = SLURMSWEEP_VERSION;
  return options;
}

namespace {

std::string ClusterText(const study::ClusterSpec& c) {
  std::string s = c.transport;
  if (c.remote()) s += fmt::format(" {}{}:{}", c.user.empty() ? "" : c.user + "@", c.host, c.port);
  if (!c.partition.empty()) s += ", partition " + c.partition;
  if (!c.account.empty()) s += ", account " + c.account;
  if (!c.qos.empty()) s += ", qos " + c.qos;
  return s;
}

// Performance or hyperparameter study (reports::StudyKind), and which parameters were sampled on
// a log scale.
void ClassifyStudy(const study::Study& study, reports::StudyMeta& meta) {
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
  // Only a guess, for a study without two measured speeds yet: ClassifyBySpeed decides.
  if (!knobs.empty()) {
    meta.kind = reports::StudyKind::kPerformance;
    meta.kind_basis =
        fmt::format("{} usually change{} the speed", fmt::join(knobs, ", "), knobs.size() == 1 ? "s" : "");
  } else if (study.objective.rank_by_time_to_target) {
    meta.kind = reports::StudyKind::kPerformance;
    meta.kind_basis = "ranked by time to target";
  } else {
    meta.kind = reports::StudyKind::kHyperparameter;
    meta.kind_basis = "no parameter is known to change the speed";
  }
}

// Chooses the target: given, else the baseline's smoothed final value, else the worst smoothed
// final value among completed trials (each of which then reaches it).
Status ChooseTarget(store::Store& store, const std::vector<store::TrialRecord>& trials,
                    const std::function<const store::TrialSummary&(int64_t)>& summary_of, const SummaryContext& ctx,
                    const ReportOptions& options, reports::StudyReport& report) {
  if (options.target) {
    report.target = options.target;
    report.target_basis = "set for this report";
    return Status::OK();
  }
  auto smoothed_final = [&](const store::TrialRecord& t) -> Result<std::optional<double>> {
    // The final value is the mean of the last kFinalWindow points: the summary keeps them.
    auto f = FinalFromTail(store, t.id, summary_of(t.id), ctx.objective);
    if (!f.ok()) return f.status();
    return *f && std::isfinite((*f)->value) ? std::optional<double>((*f)->value) : std::nullopt;
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

}  // namespace

Result<ReportData> CollectReportData(store::Store& store, const study::Study& study, int64_t study_id,
                                     const ReportOptions& options, double now, const MetricsSink& sink) {
  int left_out = 0;
  auto trials = StudyTrials(store, study, study_id, &left_out);
  if (!trials.ok()) return trials.status();
  ReportData c;
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
    if (it != study.job.vars.end()) ctx.seq_length = NumberOfText(it->second);
  }

  auto var = [&](const char* name) -> std::optional<double> {
    auto it = study.job.vars.find(name);
    return it == study.job.vars.end() ? std::nullopt : NumberOfText(it->second);
  };
  ctx.peak_tflops = var("peak_tflops");
  ctx.peak_tflops_fp8 = var("peak_tflops_fp8");
  if (auto m = study.job.vars.find("model"); m != study.job.vars.end()) ctx.model = planner::FindModelPreset(m->second);
  ctx.gpus = study.job.nodes * study.job.gpus_per_node;
  meta.monitor = study.job.monitor;
  if (study.job.monitor && study.job.vars.count("model")) {
    // What the planner predicts per GPU, drawn beside what nvidia-smi measured: the plan of the
    // trials in the store (a tpe study's proposals are in no expansion of its space). A study the
    // planner cannot read has no prediction to show; `plan` and `run` report why.
    std::vector<TrialSpec> specs;
    for (const auto& t : *trials) specs.push_back(SpecOfTrial(t, meta.param_names));
    auto plan = planner::PlanTrials(PlanJobOf(study), std::move(specs));
    if (plan.ok()) {
      for (const auto& row : plan->rows) {
        if (row.memory) ctx.predicted_gib[row.trial.key] = row.memory->Peak().Total() / (1024.0 * 1024.0 * 1024.0);
      }
    }
  }

  // Rows as `status` has them (CollectTrialRows): from the store's summaries.
  // The iteration time's series (rows) and the objective's (SummaryFacts: curve, target crossing).
  auto summaries = store.Summaries(study_id, {"iter_time_ms", ctx.objective});
  if (!summaries.ok()) return summaries.status();
  const store::TrialSummary no_summary;
  auto summary_of = [&](int64_t trial_id) -> const store::TrialSummary& {
    auto it = std::lower_bound(summaries->begin(), summaries->end(), trial_id,
                               [](const store::TrialSummary& s, int64_t id) { return s.trial_id < id; });
    return it != summaries->end() && it->trial_id == trial_id ? *it : no_summary;
  };
  report.baseline = FindBaseline(*trials, options.baseline, report.baseline_note);
  report.baseline_named = report.baseline && !options.baseline.empty();
  SWEEP_RETURN_IF_ERROR(ChooseTarget(store, *trials, summary_of, ctx, options, report));
  ctx.target = report.target;
  // Trials of at most this many points (all metrics) are reported from every point: a report
  // reads at most about kRawRowBudget rows, whatever the study's size.
  int64_t raw_rows = options.raw_row_budget.value_or(
      std::max<int64_t>(kRawRowBudget / static_cast<int64_t>(std::max<size_t>(1, with_curves)), 1000));
  auto next = summaries->begin();
  const store::TrialSummary none;
  for (const auto& t : *trials) {
    while (next != summaries->end() && next->trial_id < t.id) ++next;
    const store::TrialSummary& summary = next != summaries->end() && next->trial_id == t.id ? *next : none;
    bool from_points = summary.rows() <= raw_rows;
    Result<std::vector<store::MetricColumns>> metrics = std::vector<store::MetricColumns>();
    // Column-wise, each column allocated once (Store::MetricTable): no name string per point.
    if (from_points || sink) metrics = store.MetricTable(t.id);
    if (!metrics.ok()) return metrics.status();
    Result<TrialFacts> facts = TrialFacts();
    if (from_points) facts = MetricFacts(*metrics, ctx);
    else facts = SummaryFacts(store, t.id, summary, ctx);
    if (!facts.ok()) return facts.status();
    // The same final value as CollectTrialRows reads (FinalFromTail), from the points at hand.
    c.rows.push_back(TrialRowFromSummary(t, summary, facts->final, meta.param_names, now));
    if (!from_points && summary.Find(ctx.objective)) ++meta.curves_from_buckets;
    report.trials.push_back(Summarize(t, meta.param_names, c.rows.back(), *facts, ctx));
    if (sink) SWEEP_RETURN_IF_ERROR(sink(t, *metrics));
    // What the report keeps of its summary is in its row and facts now: the metrics and their buckets go
    // as the walk goes (10,000 trials' objective buckets are 20 MB).
    if (&summary != &none) std::vector<store::MetricSummary>().swap(next->metrics);
  }
  c.report.configs = RankStudyConfigurations(study, c.rows);  // studies with repeats (configurations.h)
  // The study kind from the measured speed; the parameters' names only guess before it is measured.
  reports::ClassifyBySpeed(c.report, meta.kind, meta.kind_basis);
  return c;
}

Result<std::vector<reports::TrialRow>> CollectTrialRows(store::Store& store, const study::Study& study,
                                                        int64_t study_id, double now, const std::string& objective,
                                                        int* left_out) {
  auto trials = StudyTrials(store, study, study_id, left_out);
  if (!trials.ok()) return trials.status();
  return TrialRowsOf(store, study, study_id, *trials, ParamNames(study), now, objective);
}

Result<std::vector<reports::TrialRow>> TrialRowsOf(store::Store& store, const study::Study& study, int64_t study_id,
                                                   const std::vector<store::TrialRecord>& trials,
                                                   const std::vector<std::string>& param_names, double now,
                                                   const std::string& objective) {
  const std::string& metric = objective.empty() ? study.objective.metric : objective;
  // What ingestion kept per trial and metric (two queries, then per trial one for the iteration
  // time's series and one for the objective's last kFinalWindow points): no other point is read,
  // however long the trials ran.
  auto summaries = store.Summaries(study_id, {"iter_time_ms"});
  if (!summaries.ok()) return summaries.status();
  std::vector<reports::TrialRow> rows;
  rows.reserve(trials.size());
  auto next = summaries->begin();
  const store::TrialSummary none;
  for (const auto& t : trials) {
    while (next != summaries->end() && next->trial_id < t.id) ++next;
    const store::TrialSummary& s = next != summaries->end() && next->trial_id == t.id ? *next : none;
    auto final = FinalFromTail(store, t.id, s, metric);
    if (!final.ok()) return final.status();
    rows.push_back(TrialRowFromSummary(t, s, *final, param_names, now));
  }
  return rows;
}

Result<reports::StudyReport> CollectReport(store::Store& store, const study::Study& study, int64_t study_id,
                                           const ReportOptions& options, double now) {
  auto c = CollectReportData(store, study, study_id, options, now);
  if (!c.ok()) return c.status();
  return std::move(c->report);
}

}  // namespace sweep::results
