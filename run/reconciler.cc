// Adoption after a crash, and jobs Slurm ran again; see reconciler.h.
#include "run/reconciler.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "base/trial_state.h"
#include "run/job_marks.h"
#include "slurm/job_state.h"

namespace sweep::run {

namespace {

// scontrol's node State for a node that failed: DOWN, FAIL, or '*' (not responding).
bool NodeFailed(const std::string& state) {
  return state.find("DOWN") != std::string::npos || state.find("FAIL") != std::string::npos ||
         state.find('*') != std::string::npos;
}

}  // namespace

// A crash between recording the intent and storing the job id leaves trials "submitting".
// Before anything new is submitted, look for their jobs by name (one squeue call) and adopt
// them; only trials with no job at all go back to "new".
Status Reconciler::Reconcile(std::vector<store::TrialRecord>& trials) {
  std::vector<std::string> names;
  for (const auto& t : trials) {
    if (t.state != kTrialSubmitting) continue;
    std::string name = t.array_name.empty() ? submitter_.JobName(t.trial_key) : t.array_name;
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  if (names.empty()) return Status::OK();
  auto found = ctx_.client.FindByName(names);
  if (!found.ok()) return found.status();
  auto marked = JobsFromStartMarks(trials);
  if (!marked.ok()) return marked.status();
  for (auto& t : trials) {
    if (t.state != kTrialSubmitting) continue;
    // The tag names the attempt (or the array, whose name names its first trial's attempt), so
    // an earlier attempt's job is never mistaken for this one.
    std::string tag = t.array_name.empty() ? submitter_.CommentTag(t) : submitter_.ArrayTag(t.array_name);
    std::string job_id;
    slurm::JobState state = slurm::JobState::kPending;
    for (const auto& j : *found) {
      if (j.comment != tag) continue;
      std::string base = slurm::ArrayBaseId(j.job_id);
      std::string mine = t.array_name.empty() ? base : fmt::format("{}_{}", base, t.array_index);
      // A task that already left squeue is still this array's: the next query finds out how it ended.
      if (job_id.empty() || j.job_id == mine) job_id = mine;
      if (j.job_id == mine && !slurm::IsTerminal(j.state) && j.state != slurm::JobState::kUnknown) state = j.state;
    }
    if (!job_id.empty()) {
      t.job_id = job_id;
      t.state = std::string(slurm::JobStateName(state));
      ctx_.Event(t.id, "adopt", fmt::format("adopted job {} submitted before a restart", job_id));
    } else if (auto m = marked->find(t.id); m != marked->end()) {
      // Gone from squeue (ended and purged after MinJobAge), but it ran: its start mark says so.
      // Adopted like the others; the next query finds out what Slurm still knows of its end.
      t.job_id = m->second;
      t.state = std::string(slurm::JobStateName(slurm::JobState::kRunning));
      ctx_.Event(
          t.id, "adopt",
          fmt::format("adopted job {} submitted before a restart (no longer in squeue; found by its start mark in {})",
                      t.job_id, MarksPath(t.log_path)));
    } else {
      UndoSubmission(t);
      ctx_.Event(t.id, "resubmit", "no job found for an interrupted submission; it will be submitted");
    }
    SWEEP_RETURN_IF_ERROR(ctx_.store.UpdateTrial(t));
  }
  return Status::OK();
}

Result<std::map<int64_t, std::string>> Reconciler::JobsFromStartMarks(const std::vector<store::TrialRecord>& trials) {
  std::vector<const store::TrialRecord*> submitting;
  for (const auto& t : trials) {
    if (t.state == kTrialSubmitting && !t.log_path.empty()) submitting.push_back(&t);
  }
  MarksRead marks;
  ReadStartMarks(ctx_.transport, submitting, marks);
  std::map<int64_t, std::string> jobs;
  for (auto& [id, text] : marks) {
    if (!text.ok()) {
      if (text.status().IsNotFound()) continue;  // never started (or never submitted)
      return text.status();
    }
    auto starts = ParseStartMarks(*text);
    if (!starts.empty()) jobs[id] = starts.front().job_id;
  }
  return jobs;
}

// Slurm ran a trial's job again under the same id (JobRequeue=1: its node failed, a higher-priority
// job preempted it, or `scontrol requeue`). The new run starts from scratch and rewrites the log,
// so the points stored so far belong to a run that is over: it is an ended attempt, and the new
// run is the next one, never spliced onto it (FindRestarts). Its log is read once it has begun.
Status Reconciler::HandleRestarts(std::vector<store::TrialRecord>& trials,
                                  const std::map<std::string, slurm::JobInfo>& jobs, Ingester::Reads& reads) {
  SWEEP_RETURN_IF_ERROR(FindRestarts(trials, jobs, reads));
  // After a restart the log is the new run's only once that run has started (Slurm truncates the
  // log when it does; until then it may be the old run's, still COMPLETING): its start mark says so.
  std::vector<const store::TrialRecord*> waiting;
  for (const auto& t : trials) {
    if (t.job_restarts == 0 || t.log_offset > 0 || t.job_id.empty() || IsFinalTrialState(t.state)) continue;
    waiting.push_back(&t);
  }
  ReadStartMarks(ctx_.transport, waiting, reads.marks);  // most were read with the logs
  for (const store::TrialRecord* t : waiting) {
    const Result<std::string>& text = reads.marks.at(t->id);
    if (!text.ok()) {
      if (text.status().IsNotFound()) continue;  // a job from before start marks: read as it is
      return text.status();
    }
    auto starts = ParseStartMarks(*text);
    bool started = std::any_of(starts.begin(), starts.end(), [&](const JobStart& s) {
      return s.job_id == t->job_id && s.restart >= t->job_restarts;
    });
    if (!started) {
      reads.hold.insert(t->id);
      reads.logs.erase(t->id);
    }
  }
  return Status::OK();
}

// A restart is seen by Slurm's restart count (squeue), by the job's start marks (which outlive
// squeue: a job purged on a cluster without accounting), or by a log shorter than what was read.
Status Reconciler::FindRestarts(std::vector<store::TrialRecord>& trials,
                                const std::map<std::string, slurm::JobInfo>& jobs, Ingester::Reads& reads) {
  const std::set<int64_t>& rewritten = reads.rewritten;
  std::vector<store::TrialRecord*> suspects;
  for (auto& t : trials) {
    if (t.job_id.empty() || IsFinalTrialState(t.state) || t.log_path.empty()) continue;
    auto it = jobs.find(t.job_id);
    // Without a count (sacct's answer, or no answer: purged with no accounting) the marks decide.
    bool no_count = it == jobs.end() ? t.stop_request.empty() : it->second.restarts < 0;
    bool counted = it != jobs.end() && it->second.restarts > t.job_restarts;
    if (counted || no_count || rewritten.count(t.id)) suspects.push_back(&t);
  }
  if (suspects.empty()) return Status::OK();
  ReadStartMarks(ctx_.transport, std::vector<const store::TrialRecord*>(suspects.begin(), suspects.end()), reads.marks);
  std::vector<std::string> cancel;
  std::map<std::string, std::string> node_states;  // one scontrol per failed node, however many jobs it ran
  for (store::TrialRecord* suspect : suspects) {
    store::TrialRecord& t = *suspect;
    std::vector<JobStart> starts;
    const Result<std::string>& text = reads.marks.at(t.id);
    if (text.ok()) {
      for (auto& s : ParseStartMarks(*text)) {
        if (s.job_id == t.job_id) starts.push_back(std::move(s));
      }
    } else if (!text.status().IsNotFound()) {
      return text.status();
    }
    auto it = jobs.find(t.job_id);
    bool counted_by_squeue = it != jobs.end() && it->second.restarts >= 0;
    int seen = std::max(t.job_restarts, counted_by_squeue ? it->second.restarts : 0);
    for (const auto& s : starts) seen = std::max(seen, s.restart);
    // A log rewritten while squeue shows no new count is read again next tick, when it does.
    bool restarted = seen > t.job_restarts || (rewritten.count(t.id) && !counted_by_squeue);
    if (!restarted) continue;
    if (seen == t.job_restarts) ++seen;
    reads.logs.erase(t.id);  // the new run's log is read from its start

    // The run that ended: where it ran, from when to when.
    std::string host;
    double run_start = t.started_at.value_or(0), next_start = 0;
    for (const auto& s : starts) {
      if (s.restart == t.job_restarts) {
        host = s.host;
        if (!t.started_at) run_start = s.time;
      }
      if (s.restart == seen) next_start = s.time;
    }
    std::string cls(slurm::JobStateName(slurm::JobState::kPreempted));
    if (!host.empty() && !node_states.count(host)) {
      auto node = ctx_.client.NodeState(host);
      if (!node.ok() && node.status().IsUnavailable()) return node.status();
      node_states[host] = node.ok() ? *node : "";
    }
    if (!host.empty() && NodeFailed(node_states[host])) {
      cls = std::string(slurm::JobStateName(slurm::JobState::kNodeFail));
    }
    double end = next_start > 0 ? std::min(next_start, ctx_.clock.Now()) : ctx_.clock.Now();
    double ran = run_start > 0 ? std::max(0.0, end - run_start) : 0;
    auto policy = ctx_.study.retry.find(cls);
    int allowed = policy == ctx_.study.retry.end() ? 0 : policy->second;
    std::string what = fmt::format("job {} was started again by Slurm (restart {}: {})", t.job_id, seen,
                                   cls == "node_fail" ? "its node " + host + " failed" : "preempted or requeued");
    t.job_restarts = seen;
    if (t.attempt > allowed) {
      // No retry left for this class: the attempt ends as any other would, and the new run goes.
      // Its log is read to its end first: until the rerun starts (its start mark), the log is
      // still the ended run's, with whatever it wrote since the last tick.
      if (next_start == 0 && !rewritten.count(t.id)) {
        auto tail = ingester_.Ingest(t);
        if (!tail.ok()) return tail.status();
      }
      if (run_start > 0) t.started_at = run_start;
      t.ended_at = end;
      t.state = cls;
      t.reason = fmt::format("{} in attempt {}; no retry left ([retry] {} = {}), so the new run was cancelled", what,
                             t.attempt, cls, allowed);
      t.stop_request = t.reason;
      ctx_.Event(t.id, "end", fmt::format("job {}: {} ({})", t.job_id, cls, t.reason));
      SWEEP_RETURN_IF_ERROR(ctx_.store.UpdateTrial(t));
      cancel.push_back(t.job_id);
      continue;
    }
    ctx_.Event(t.id, "requeue",
               fmt::format("{}: attempt {} ended after {:.0f} s; its points are dropped and the new run is attempt {} "
                           "(retry {} of {} for {})",
                           what, t.attempt, ran, t.attempt + 1, t.attempt, allowed, cls));
    t.prior_run_s += ran;
    t.attempt += 1;
    t.started_at.reset();
    t.ended_at.reset();
    t.reason = fmt::format("retry after {} in attempt {}: {}", cls, t.attempt - 1, what);
    SWEEP_RETURN_IF_ERROR(ctx_.store.UpdateTrial(t));
    SWEEP_RETURN_IF_ERROR(ctx_.store.ResetMetrics(t.id));
    t.log_offset = 0;
    t.telemetry_offset = 0;
    ingester_.ForgetRead(t.id);
  }
  return ctx_.client.Cancel(cancel);
}

}  // namespace sweep::run
