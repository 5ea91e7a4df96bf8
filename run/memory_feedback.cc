// The run's memory feedback; see memory_feedback.h.
#include "run/memory_feedback.h"

#include <fmt/format.h>

#include <algorithm>

#include "base/trial_state.h"
#include "results/phases.h"

namespace sweep::run {

Result<std::map<std::string, std::string>> MemoryFeedback::PlanStudy(bool submit_predicted_oom) {
  std::map<std::string, std::string> drops;
  plan_.reset();
  plan_rows_.clear();
  tpe_rows_.clear();
  if (!ctx_.study.job.vars.count("model")) return drops;
  auto plan = sweep::results::PlanStudy(ctx_.study);
  if (!plan.ok()) return plan.status();
  plan_ = std::move(*plan);
  headroom_bytes_ = plan_->headroom_gib * kGiB;
  for (const auto& row : plan_->rows) plan_rows_[row.trial.key] = &row;
  for (const auto& row : plan_->rows) {
    bool oom = row.verdict == planner::PlanRow::Verdict::kOom;
    if (row.verdict == planner::PlanRow::Verdict::kRule || (oom && !submit_predicted_oom)) {
      drops[row.trial.key] = (oom ? "memory plan: " : "parallelism rule: ") + row.reason;
    }
  }
  return drops;
}

Status MemoryFeedback::PlanProposed(const std::vector<TrialSpec>& specs) {
  if (!plan_ || specs.empty()) return Status::OK();
  auto plan = results::PlanTrials(ctx_.study, specs);
  if (!plan.ok()) return plan.status();
  for (auto& row : plan->rows) {
    std::string key = row.trial.key;
    plan_rows_[key] = &(tpe_rows_[key] = std::move(row));
  }
  return Status::OK();
}

// Learning from a CUDA OOM: a configuration that needs at least as much memory on every axis
// would fail the same way, so it never reaches the queue.
Status MemoryFeedback::SkipDominatedByOom(const store::TrialRecord& oom, std::vector<store::TrialRecord>& trials) {
  auto spec = ctx_.specs.find(oom.trial_key);
  if (spec == ctx_.specs.end()) return Status::OK();
  std::vector<std::string> queued;  // already waiting in the queue (array tasks): cancelled
  for (auto& t : trials) {
    bool waiting = t.state == "pending" && !t.job_id.empty() && t.stop_request.empty();
    if ((t.state != kTrialNew && !waiting) || t.id == oom.id) continue;
    auto candidate = ctx_.specs.find(t.trial_key);
    if (candidate == ctx_.specs.end() || candidate->second.params.size() != spec->second.params.size()) continue;
    if (!DominatedByOom(candidate->second, spec->second)) continue;
    std::string why = fmt::format("skipped: dominated by the CUDA OOM of trial {} ({})", oom.id, oom.trial_key);
    if (waiting) {
      // Recorded before scancel, so its end is classed skipped even after a crash.
      t.stop_request = why;
      queued.push_back(t.job_id);
    } else {
      t.state = std::string(kTrialSkipped);
      t.reason = why;
    }
    SWEEP_RETURN_IF_ERROR(ctx_.store.UpdateTrial(t));
    ctx_.Event(t.id, "skip", why + (waiting ? fmt::format("; cancelling queued job {}", t.job_id) : ""));
  }
  return ctx_.client.Cancel(queued);
}

bool MemoryFeedback::DominatedByOom(const TrialSpec& candidate, const TrialSpec& oom) const {
  if (candidate.params.size() != oom.params.size()) return false;
  TrialSpec c = candidate, o = oom;
  for (const study::ParamSpec& p : ctx_.study.space) {
    if (!p.choices.empty() || p.integer) continue;
    auto named = [&](const auto& kv) { return kv.first == p.name; };
    c.params.erase(std::remove_if(c.params.begin(), c.params.end(), named), c.params.end());
    o.params.erase(std::remove_if(o.params.begin(), o.params.end(), named), o.params.end());
  }
  return planner::NeedsAtLeastAsMuchMemory(c, o);
}

Result<std::optional<double>> MemoryFeedback::MeasuredExcess(const store::TrialRecord& done) {
  if (!plan_) return std::optional<double>();
  auto row = plan_rows_.find(done.trial_key);
  if (row == plan_rows_.end() || !row->second->memory) return std::optional<double>();
  // The peak from the store's summary of each metric (its largest finite value): no point is read.
  auto summary = ctx_.store.Summary(done.id);
  if (!summary.ok()) return summary.status();
  for (const char* name : {"mem_max_reserved_mb", "mem_max_allocated_mb"}) {
    const store::MetricSummary* m = summary->Find(name);
    if (m && m->finite > 0) return std::optional<double>(m->max * kMiB - row->second->memory->Peak().Total());
  }
  return std::optional<double>();
}

Status MemoryFeedback::CalibrateMemory(const store::TrialRecord& done, std::vector<store::TrialRecord>& trials) {
  auto excess = MeasuredExcess(done);
  if (!excess.ok()) return excess.status();
  if (!*excess || **excess <= headroom_bytes_) return Status::OK();
  headroom_bytes_ = **excess;
  double predicted = plan_rows_[done.trial_key]->memory->Peak().Total();
  double observed = predicted + headroom_bytes_;
  ctx_.Event(done.id, "calibrate",
             fmt::format("memory plan recalibrated: trial {} ({}) peaked at {:.1f} GiB, {:.1f} GiB more than the "
                         "{:.1f} GiB predicted; headroom is now {:.1f} GiB",
                         done.id, done.trial_key, observed / kGiB, headroom_bytes_ / kGiB, predicted / kGiB,
                         headroom_bytes_ / kGiB));
  double capacity = plan_->gpu_mem_gib * kGiB;
  for (auto& t : trials) {
    if (t.state != kTrialNew) continue;
    auto r = plan_rows_.find(t.trial_key);
    if (r == plan_rows_.end() || !r->second->memory) continue;
    double need = r->second->memory->Peak().Total() + headroom_bytes_;
    if (need <= capacity) continue;
    t.state = std::string(kTrialSkipped);
    t.reason = fmt::format("skipped: memory plan calibrated on trial {}: needs {:.1f} GiB > {:.1f} GiB", done.id,
                           need / kGiB, plan_->gpu_mem_gib);
    SWEEP_RETURN_IF_ERROR(ctx_.store.UpdateTrial(t));
    ctx_.Event(t.id, "skip", t.reason);
  }
  return Status::OK();
}

}  // namespace sweep::run
