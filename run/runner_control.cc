// The user's control of a run: `cancel` (every trial, or those an edit left outside the space),
// a cancel request that a starting or running run obeys (cancel_request.h), and waiting for the
// cancelled jobs to end. Part of Runner (runner.h).
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>

#include "base/trial_state.h"
#include "run/cancel_request.h"
#include "run/runner.h"
#include "slurm/job_state.h"

namespace sweep::run {

Status Runner::ObeyCancelRequest() {
  if (cancel_obeyed_) return Status::OK();
  auto requests = store_.EventsAfter(ctx_.study_id, kCancelRequestEvent, cancel_seen_);
  if (!requests.ok()) return requests.status();
  if (requests->empty()) return Status::OK();
  // Not submitting while this fails (the tick's status), and tried again next tick.
  auto n = CancelAll();
  if (!n.ok()) return n.status();
  cancel_obeyed_ = true;
  Event(std::nullopt, kCancelDoneEvent,
        fmt::format("the run going on (pid {}) cancelled {} trial(s) at the request of `slurmsweep cancel`, submits "
                    "nothing more and ends once their jobs have",
                    ::getpid(), *n));
  return Status::OK();
}

Result<int> Runner::CancelAll() {
  return Cancel([](const store::TrialRecord&) { return true; }, true);
}

Result<int> Runner::CancelOnly(const std::set<std::string>& keys) {
  return Cancel([&](const store::TrialRecord& t) { return keys.count(t.trial_key) > 0; }, false);
}

Result<int> Runner::Cancel(const std::function<bool(const store::TrialRecord&)>& which, bool whole_arrays) {
  if (ctx_.study_id == 0) {
    // The study as the last run recorded it (a cancel is no run: the settings it ran with stay),
    // or recorded now for a run that is starting and has not yet.
    auto known = store_.GetStudy(study_.name);
    auto id = known.ok() ? Result<int64_t>(known->id)
                         : store_.UpsertStudy(study_.name, study_.path, StoredSettingsHash(study_), clock_.Now());
    if (!id.ok()) return id.status();
    ctx_.study_id = *id;
  }
  auto listed = store_.ListTrials(ctx_.study_id);
  if (!listed.ok()) return listed.status();
  std::vector<store::TrialRecord> chosen;
  for (auto& t : *listed) {
    if (which(t)) chosen.push_back(std::move(t));
  }
  // A job array is cancelled by its id (every task of it is this study's): the scancel command
  // stays short however many thousand tasks are queued.
  std::vector<std::string> ids;
  int live = 0;
  for (auto& t : chosen) {
    if (t.job_id.empty() || IsFinalTrialState(t.state)) continue;
    ++live;
    // Some of an array's tasks only (--outside-space): each by its own id.
    std::string id = t.array_name.empty() || !whole_arrays ? t.job_id : slurm::ArrayBaseId(t.job_id);
    if (std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    // Recorded before scancel, so the end is classed as ours even if we die right after.
    t.stop_request = "cancelled by the user (slurmsweep cancel)";
    SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(t));
  }
  SWEEP_RETURN_IF_ERROR(client_.Cancel(ids));
  int unsubmitted = 0;
  for (auto& t : chosen) {
    if (t.state != kTrialNew) continue;
    t.state = std::string(slurm::JobStateName(slurm::JobState::kCancelled));
    t.reason = "cancelled by the user before submission";
    SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(t));
    ++unsubmitted;
  }
  Event(std::nullopt, "cancel",
        fmt::format("cancel requested: scancel of {} live trial(s) in {} job(s) or array(s), {} unsubmitted trial(s) "
                    "cancelled",
                    live, ids.size(), unsubmitted));
  return live + unsubmitted;
}

Result<int> Runner::AwaitEnds(double max_wait_s, double poll_s) {
  double deadline = clock_.Now() + max_wait_s;
  for (;;) {
    auto trials = store_.ListTrials(ctx_.study_id);
    if (!trials.ok()) return trials.status();
    TickReport report;
    SWEEP_RETURN_IF_ERROR(reconciler_.Reconcile(*trials));
    SWEEP_RETURN_IF_ERROR(QueryAndIngest(*trials, report));
    int open = static_cast<int>(std::count_if(trials->begin(), trials->end(), [](const store::TrialRecord& t) {
      return !t.job_id.empty() && !IsFinalTrialState(t.state);
    }));
    if (open == 0 || clock_.Now() >= deadline) return open;
    clock_.SleepFor(std::min(poll_s, deadline - clock_.Now()));
  }
}

}  // namespace sweep::run
