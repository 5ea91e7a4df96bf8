// What comes after a job's end: its class, a chained job, a retry; see retry_policy.h.
#include "run/retry_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "base/trial_state.h"
#include "logs/classify.h"

namespace sweep::run {

// A job that stopped at its time limit after saving a checkpoint continues in a new job. Unlike
// a retry, the metrics are kept and the time axis goes on: the chain is one curve.
Result<bool> RetryPolicy::MaybeChain(store::TrialRecord& t) {
  const study::JobSpec& job = ctx_.study.job;
  if (job.max_chain <= 0 || (t.state != "completed" && t.state != "timeout")) return false;
  auto tail = ingester_.LogTail(t);
  if (!tail.ok()) return tail.status();
  if (tail->find(job.resume_marker) == std::string::npos) return false;
  if (t.attempt >= job.max_chain) {
    t.state = "timeout";
    t.reason = fmt::format("stopped after {} chained jobs (max_chain) with training unfinished", t.attempt);
    SWEEP_RETURN_IF_ERROR(ctx_.store.UpdateTrial(t));
    ctx_.Event(t.id, "chain_end", t.reason);
    return true;
  }
  ctx_.Event(t.id, "chain",
             fmt::format("job {} saved a checkpoint and stopped ({}); continuing in a new job ({} of at most {})",
                         t.job_id, t.state, t.attempt + 1, job.max_chain));
  t.reason = fmt::format("continuing from checkpoint (job {} of at most {})", t.attempt + 1, job.max_chain);
  t.state = std::string(kTrialNew);
  t.job_id.clear();
  t.slurm_state.clear();
  t.exit_code.clear();
  t.ended_at.reset();  // started_at stays: the chain's wall time runs from its first job
  t.array_name.clear();
  t.array_index = -1;
  SWEEP_RETURN_IF_ERROR(ctx_.store.UpdateTrial(t));
  // The next job logs to a new file: read it from its start, keep every point and the parser's
  // time axis.
  SWEEP_RETURN_IF_ERROR(ctx_.store.AppendMetrics(t.id, {}, 0));
  t.log_offset = 0;
  if (ctx_.study.job.monitor) {
    SWEEP_RETURN_IF_ERROR(ctx_.store.AppendTelemetry(t.id, {}, 0));
    t.telemetry_offset = 0;
  }
  return true;
}

// Slurm says how a job ended; the log often says why (logs/classify.h). The classes decide the
// retry policy.
Status RetryPolicy::Classify(const store::TrialRecord& t, std::string& state, std::string& reason) {
  if (state == "cancelled") {
    logs::ClassifyCancelled(t.stop_request, t.slurm_state, state, reason);
    return Status::OK();
  }
  if (!logs::EndReadsLog(state)) return Status::OK();
  auto tail = ingester_.LogTail(t);
  if (!tail.ok()) return tail.status();
  std::optional<logs::ObjectiveAtEnd> last;
  if (state == "failed" || state == "completed") {
    auto row = ctx_.store.LastMetric(t.id, ctx_.study.objective.metric);
    if (!row.ok()) return row.status();
    if (row->has_value()) last = logs::ObjectiveAtEnd{ctx_.study.objective.metric, (*row)->step, (*row)->value};
  }
  logs::ClassifyFromLog(*tail, last, state, reason);
  // A rule stopped it, but the job ended on its own before the scancel landed: completed it is,
  // and its reason keeps the decision the log announced.
  if (state == "completed" && reason.empty() && t.stop_request.rfind("pruned", 0) == 0) {
    reason = "completed before the stop took effect (" + t.stop_request + ")";
  }
  return Status::OK();
}

// Policy per class ([retry] in the study): retries start from scratch with a new attempt number.
Status RetryPolicy::MaybeRetry(store::TrialRecord& t) {
  auto policy = ctx_.study.retry.find(t.state);
  int allowed = policy == ctx_.study.retry.end() ? 0 : policy->second;
  if (t.attempt > allowed) return Status::OK();
  ctx_.Event(
      t.id, "retry",
      fmt::format("attempt {} ended {} ({}); retrying ({} of {})", t.attempt, t.state, t.reason, t.attempt, allowed));
  return StartOver(t, fmt::format("retry after {} in attempt {}: {}", t.state, t.attempt, t.reason));
}

Status RetryPolicy::StartOver(store::TrialRecord& t, std::string reason) {
  t.reason = std::move(reason);
  // The attempt's run time is spent whatever comes next: the report's cost counts it.
  if (t.started_at && t.ended_at) t.prior_run_s += std::max(0.0, *t.ended_at - *t.started_at);
  t.state = std::string(kTrialNew);
  t.job_id.clear();
  t.slurm_state.clear();
  t.exit_code.clear();
  t.stop_request.clear();
  t.started_at.reset();
  t.ended_at.reset();
  t.array_name.clear();
  t.array_index = -1;
  SWEEP_RETURN_IF_ERROR(ctx_.store.UpdateTrial(t));
  SWEEP_RETURN_IF_ERROR(ctx_.store.ResetMetrics(t.id));
  t.log_offset = 0;
  t.telemetry_offset = 0;
  ingester_.Forget(t.id);
  return Status::OK();
}

}  // namespace sweep::run
