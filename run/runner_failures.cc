// The run loop's side of start_failures.h: on a storm, the queued tasks that have not started are
// cancelled (their trials go back to new) and the run stops with the class, the last lines of a
// failing log and the way on. Runner methods kept apart from runner.cc; see runner.h.
#include <fmt/format.h>

#include <algorithm>

#include "base/terminal.h"
#include "base/trial_state.h"
#include "logs/classify.h"
#include "run/runner.h"
#include "slurm/job_state.h"

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
  SWEEP_RETURN_IF_ERROR(client_.Cancel(ids));
  // They never started: like trials never submitted, the next `run` submits them.
  SWEEP_RETURN_IF_ERROR(store_.InTransaction([&]() -> Status {
    for (store::TrialRecord* t : queued) SWEEP_RETURN_IF_ERROR(retry_.StartOver(*t, why));
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
      storm_.needed(), cls, queued.size(), unsubmitted, running, study_.path, way_on, example);
  Event(std::nullopt, "failure_storm", message);
  return Status::FailedPrecondition(fmt::format("{}: {}", study_.path, message));
}

}  // namespace sweep::run
