// The run loop's side of start_failures.h: on a storm, the queued tasks that are still pending when
// scancel runs are cancelled (their trials go back to new; one that started meanwhile goes on) and the run stops with
// the class, the last lines of a failing log and the way on. Runner methods kept apart from runner.cc; see runner.h.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>

#include "base/terminal.h"
#include "base/trial_state.h"
#include "logs/classify.h"
#include "run/runner.h"
#include "slurm/job_state.h"
#include "slurm/pending_reason.h"

namespace sweep::run {

Status Runner::StopFailureStorm(std::vector<store::TrialRecord>& trials) {
  for (const auto& t : trials) {
    if (t.state == "completed") storm_.Completed();  // in an earlier run too: the program works
  }
  const std::string cls = storm_.Storm();
  if (cls.empty()) return Status::OK();
  std::vector<store::TrialRecord*> queued;
  int unsubmitted = 0, running = 0;
  for (auto& t : trials) {
    if (!ctx_.specs.count(t.trial_key)) continue;
    if (t.state == "pending" && !t.job_id.empty() && t.stop_request.empty()) queued.push_back(&t);
    else if (t.state == kTrialNew) ++unsubmitted;
    else if (!t.job_id.empty() && !IsFinalTrialState(t.state)) ++running;
  }
  bool to_propose = tpe_.MoreToPropose(trials);
  // Nothing left to hold back: the sweep ends as it would, and its summary says how.
  if (queued.empty() && unsubmitted == 0 && !to_propose) return Status::OK();

  std::string why =
      fmt::format("held back: the first {} trials to end all ended {} (failure storm)", storm_.needed(), cls);
  std::vector<std::string> ids;
  for (store::TrialRecord* t : queued) {
    // Recorded before scancel, so the end is classed as ours even if we die right after.
    t->stop_request = why;
    SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(*t));
    ids.push_back(t->job_id);
  }
  // Only those still pending when scancel runs: a task may have started, or started and ended,
  // since this tick's query, and its run and its end are kept. So the states are read again right
  // before the cancel, and again after it. (Not `scancel --state=PENDING`: Slurm 22.05 applies it
  // to the whole pending part of an array, tasks not named included.)
  auto before = client_.Query(ids);
  if (!before.ok()) return before.status();
  std::vector<std::string> still_pending;
  for (const auto& id : ids) {
    auto it = before->find(id);
    if (it != before->end() && it->second.state == slurm::JobState::kPending) still_pending.push_back(id);
  }
  SWEEP_RETURN_IF_ERROR(client_.Cancel(still_pending));
  auto after = client_.Query(still_pending);
  if (!after.ok()) return after.status();
  auto started = [](const slurm::JobInfo& j) {
    return !j.start_time.empty() && j.start_time != "N/A" && j.start_time != "Unknown" && j.start_time != "None";
  };
  std::vector<store::TrialRecord*> cancelled;
  SWEEP_RETURN_IF_ERROR(store_.InTransaction([&]() -> Status {
    for (store::TrialRecord* t : queued) {
      bool asked = std::find(still_pending.begin(), still_pending.end(), t->job_id) != still_pending.end();
      auto it = after->find(t->job_id);
      // A cancelled pending task leaves squeue at once; found nowhere, or cancelled before it started.
      bool never_ran =
          asked && (it == after->end() || (it->second.state == slurm::JobState::kCancelled && !started(it->second)));
      if (never_ran) {
        // Like a trial never submitted, the next `run` submits it.
        SWEEP_RETURN_IF_ERROR(retry_.StartOver(*t, why));
        cancelled.push_back(t);
        continue;
      }
      ++running;
      // Started before the cancel reached it: the next tick records its state. Cancelled while it
      // ran (it started between the two reads): its end stays ours (stop_request), and is kept.
      if (!asked || (it != after->end() && it->second.state != slurm::JobState::kCancelled)) {
        t->stop_request.clear();
        SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(*t));
      }
    }
    return Status::OK();
  }));

  std::string example;
  auto failing = std::find_if(trials.begin(), trials.end(),
                              [&](const store::TrialRecord& t) { return t.id == storm_.first_trial(); });
  if (failing != trials.end()) {
    auto tail = ingester_.LogTail(*failing);
    if (!tail.ok()) return tail.status();
    std::string lines;
    for (const std::string& l : logs::LastLogLines(*tail, 10)) lines += "\n    " + TerminalSafe(l);
    example = fmt::format("\n  trial {} ({}{}); the last lines of its log {}:{}", failing->trial_key, failing->state,
                          failing->reason.empty() ? "" : ": " + failing->reason, failing->log_path,
                          lines.empty() ? "\n    (empty)" : lines);
  }
  std::string way_on;
  if (cls == "timeout") {
    way_on = fmt::format(
        "if the trials need longer, raise [job] time_limit (now {}), then `slurmsweep run --resubmit timeout {}` "
        "runs them again and submits the rest",
        study_.job.time_limit.empty() ? "the partition's default" : study_.job.time_limit, study_.path);
  } else {
    way_on = fmt::format(
        "fix the cause (the log above; `slurmsweep logs {} TRIAL` shows a whole log), then `slurmsweep run "
        "--resubmit {} {}` runs those trials again and submits the rest",
        study_.path, cls, study_.path);
  }
  std::string message = fmt::format(
      "the first {} trials to end all ended {} and none completed: submission stopped (a failure storm). {} queued "
      "task(s) that had not started were cancelled and, with {} trial(s) not submitted yet, wait for the next "
      "`slurmsweep run`; {} trial(s) already running go on (`slurmsweep cancel {}` stops them). How to go on: {}{}",
      storm_.needed(), cls, cancelled.size(), unsubmitted, running, study_.path, way_on, example);
  Event(std::nullopt, "failure_storm", message);
  return Status::FailedPrecondition(fmt::format("{}: {}", study_.path, message));
}

Status Runner::StopOnNeverClearingReason(const std::vector<store::TrialRecord>& trials) {
  std::vector<std::string> stuck;
  std::string way_on, reason;
  const store::TrialRecord* node_check = NodeCheckDue(trials);
  for (const auto& t : trials) {
    if (t.state != "pending" || t.job_id.empty() || !ctx_.specs.count(t.trial_key)) continue;
    std::string way = slurm::NeverClearingReason(t.reason);
    if (way.empty() && &t == node_check) {
      auto unknown = UnknownNodeWayOn(t);
      if (!unknown.ok()) return unknown.status();
      way = std::move(*unknown);
    }
    if (way.empty()) continue;
    if (stuck.empty()) way_on = way, reason = t.reason;
    stuck.push_back(fmt::format("{} (job {})", t.trial_key, t.job_id));
  }
  if (stuck.empty()) return Status::OK();
  std::string message = fmt::format(
      "{} trial(s) wait for a reason that never clears by itself, first {}: pending ({}): {}. Submission "
      "stopped; nothing was cancelled and nothing is lost: the jobs stay queued (`slurmsweep cancel {}` removes "
      "them), then `slurmsweep run --resubmit cancelled {}` submits them with the new settings",
      stuck.size(), stuck.front(), TerminalSafe(reason), way_on, study_.path, study_.path);
  Event(std::nullopt, "stuck", message);
  return Status::FailedPrecondition(fmt::format("{}: {}", study_.path, message));
}

const store::TrialRecord* Runner::NodeCheckDue(const std::vector<store::TrialRecord>& trials) {
  // A node that is down or drained comes back; one the cluster does not have never does. Slurm's
  // reason does not say which ("ReqNodeNotAvail, May be reserved for other job"): a job's own node
  // list is looked up, a few scontrol calls. One job per half minute for the whole study, however
  // many wait so (an array behind a drained node would otherwise cost that per task): the one
  // looked at longest ago, so that jobs asking for different nodes each get their turn.
  constexpr double kNodeRecheckS = 30;
  double last = -std::numeric_limits<double>::infinity();
  for (const auto& [job, at] : node_checked_) last = std::max(last, at);
  if (clock_.Now() - last < kNodeRecheckS) return nullptr;
  const store::TrialRecord* due = nullptr;
  double due_at = std::numeric_limits<double>::infinity();
  for (const auto& t : trials) {
    if (t.state != "pending" || t.job_id.empty() || !ctx_.specs.count(t.trial_key)) continue;
    if (t.reason.rfind("ReqNodeNotAvail", 0) != 0) continue;
    auto seen = node_checked_.find(t.job_id);
    double at = seen == node_checked_.end() ? -std::numeric_limits<double>::infinity() : seen->second;
    if (at < due_at) due = &t, due_at = at;
  }
  return due;
}

Result<std::string> Runner::UnknownNodeWayOn(const store::TrialRecord& t) {
  node_checked_[t.job_id] = clock_.Now();
  auto unknown = client_.UnknownRequestedNodes(t.job_id);
  if (!unknown.ok()) return unknown.status();
  if (unknown->empty()) return std::string();
  return fmt::format(
      "the job asks for node(s) {} that the cluster does not have (`scontrol show node` does not know them): "
      "check the template's --nodelist/-w (`sinfo -N` lists the nodes)",
      fmt::join(*unknown, ","));
}

}  // namespace sweep::run
