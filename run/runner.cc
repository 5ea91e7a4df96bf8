// The run loop: Tick and Run, and the entry points of `run`, `cancel` and `run --resubmit`; the
// work is the collaborators' (runner.h).
#include "run/runner.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <malloc.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "base/trial_state.h"
#include "results/configurations.h"
#include "stopping/siblings.h"
#include "results/phases.h"
#include "run/cancel_request.h"
#include "run/outside_space.h"
#include "run/poll_schedule.h"
#include "run/query_pace.h"
#include "results/phase_seeds.h"
#include "results/study_trials.h"
#include "run/trial_script.h"
#include "slurm/job_state.h"
#include "study/loader.h"
#include "study/repeats.h"

namespace sweep::run {
namespace {

std::string ReadLocalFile(const std::string& path, Status* st) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    *st = Status::NotFound(fmt::format("cannot read {}", path));
    return "";
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string BaseName(const std::string& path) { return path.substr(path.find_last_of('/') + 1); }

// Slurm prints times as local "2026-12-02T17:18:01", or "N/A", "Unknown", "NONE".
std::optional<double> ParseSlurmTime(const std::string& text) {
  std::tm tm{};
  const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%S", &tm);
  if (!end || *end != '\0') return std::nullopt;
  tm.tm_isdst = -1;
  return static_cast<double>(std::mktime(&tm));
}

// "42:0" -> "exit code 42", "0:9" -> "killed by signal 9".
std::string DescribeExit(const std::string& exit_code) {
  auto colon = exit_code.find(':');
  if (colon == std::string::npos) return exit_code.empty() ? "" : "exit code " + exit_code;
  std::string code = exit_code.substr(0, colon), sig = exit_code.substr(colon + 1);
  if (sig != "0") return "killed by signal " + sig;
  return "exit code " + code;
}

// The studies table's spec_hash: the hash of the settings trials depend on (Study::settings_hash),
// marked so that a database written by an earlier version, which stored the file's bytes' hash,
// is compared as it was.
constexpr std::string_view kSettingsHashMark = "settings:";
// Whether what the trials that ran depend on changed since the run that stored `stored`.
bool SettingsChanged(const study::Study& study, const std::string& stored) {
  if (stored.starts_with(kSettingsHashMark)) return stored.substr(kSettingsHashMark.size()) != study.settings_hash;
  return stored != study.hash;
}

}  // namespace

std::string StoredSettingsHash(const study::Study& study) {
  return std::string(kSettingsHashMark) + study.settings_hash;
}

Runner::Runner(const study::Study& study, store::Store& store, slurm::Transport& transport, Clock& clock,
               std::ostream& log)
    : study_(study),
      store_(store),
      transport_(transport),
      client_(transport_),
      clock_(clock),
      log_(log),
      ctx_(study, store, transport_, client_, clock),
      stopping_(study.stopping),
      curves_(ctx_, stopping_),
      submitter_(ctx_),
      ingester_(ctx_, stopping_),
      reconciler_(ctx_, submitter_, ingester_),
      memory_(ctx_),
      retry_(ctx_, ingester_),
      tpe_(ctx_, memory_),
      reports_(ctx_),
      storm_(StartFailures::Needed(study.cluster.max_concurrent)) {
  ctx_.event = [this](std::optional<int64_t> trial_id, const std::string& kind, const std::string& message) {
    Event(trial_id, kind, message);
  };
}

Runner::~Runner() = default;

void Runner::Event(std::optional<int64_t> trial_id, const std::string& kind, const std::string& message) {
  log_ << fmt::format("[{}] {}{}\n", FormatUtc(clock_.Now()), trial_id ? fmt::format("trial {}: ", *trial_id) : "",
                      message);
  log_.flush();
  // An event that cannot be stored is not worth stopping the sweep for; the log line stands.
  (void)store_.AddEvent(ctx_.study_id, trial_id, clock_.Now(), kind, message);
  if (on_event_) on_event_(trial_id, kind, message);
}

Status Runner::Prepare() {
  if (run_started_at_ == 0) run_started_at_ = clock_.Now();
  auto before = store_.GetStudy(study_.name);
  auto id = store_.UpsertStudy(study_.name, study_.path, StoredSettingsHash(study_), clock_.Now());
  if (!id.ok()) return id.status();
  ctx_.study_id = *id;
  study_changed_ = before.ok() && SettingsChanged(study_, before->spec_hash);
  if (study_changed_) {
    // Trials are keyed by their [space] values alone, so a trial that already ran keeps its
    // results under the old [job] settings, template variables or objective.
    auto ran = store_.ListTrials(ctx_.study_id);
    if (!ran.ok()) return ran.status();
    Event(std::nullopt, "changed",
          fmt::format(
              "warning: {} changed since this study's last run (hash {} -> {}); trials that already ran "
              "keep their results from the old settings, and only new trials use the new ones. To compare "
              "like with like, give the changed study a new [study] name.{}",
              study_.path, before->spec_hash, StoredSettingsHash(study_),
              ChangedStudyTimeoutHint(std::count_if(ran->begin(), ran->end(),
                                                    [](const store::TrialRecord& t) { return t.state == "timeout"; }),
                                      study_.path)));
  }

  auto specs = results::ExpandStudy(study_);
  if (!specs.ok()) return specs.status();
  auto stored_trials = store_.ListTrials(ctx_.study_id);
  if (!stored_trials.ok()) return stored_trials.status();
  for (auto& spec : results::StoredRepeats(study_, *specs, *stored_trials))
    specs->push_back(std::move(spec));  // --repeat-top's
  // A study that names a model gets the memory planner's verdict before anything is queued:
  // configurations Megatron would refuse, or that cannot fit in GPU memory, are dropped.
  auto plan_drops = memory_.PlanStudy(ctx_.submit_predicted_oom);
  if (!plan_drops.ok()) return plan_drops.status();
  std::vector<store::TrialRecord> records;
  ctx_.specs.clear();
  for (auto spec : *specs) {
    if (spec.dropped_reason.empty() && plan_drops->count(spec.key)) spec.dropped_reason = (*plan_drops)[spec.key];
    ctx_.specs[spec.key] = spec;
    records.push_back(store::TrialRecord::FromSpec(spec));
  }
  std::vector<TrialSpec> checked;
  for (const auto& [key, spec] : ctx_.specs) checked.push_back(spec);
  // Every trial's script renders before anything is stored or submitted: a value its template
  // cannot carry stops the run here, not when that trial comes up after others were submitted.
  // A tpe study has no trials yet: each value of its lists renders instead, so a value its
  // template cannot carry stops the run before the first proposal is submitted.
  if (study_.sampler == "tpe") {
    if (auto refused = ValueRefusals(study_); !refused.empty()) {
      return Status::InvalidArgument(fmt::format("{} value(s) cannot be rendered, nothing was submitted; first, {}: {}",
                                                 refused.size(), refused.begin()->first, refused.begin()->second));
    }
  }
  if (auto refused = RenderRefusals(study_, checked); !refused.empty()) {
    return Status::InvalidArgument(
        fmt::format("{} trial(s) cannot be rendered, nothing was submitted; first, trial "
                    "{}: {}",
                    refused.size(), refused.begin()->first, refused.begin()->second));
  }
  SWEEP_RETURN_IF_ERROR(store_.InsertTrialsIfAbsent(ctx_.study_id, records));
  if (study_.sampler == "tpe") SWEEP_RETURN_IF_ERROR(tpe_.Prepare());

  const std::string& w = study_.cluster.workdir;
  auto stored = store_.ListTrials(ctx_.study_id);
  if (!stored.ok()) return stored.status();
  ctx_.files = FilesOf(w, study_.name, *stored);
  auto record = store_.GetStudy(study_.name);
  if (!record.ok()) return record.status();
  std::string host = LocalHostName();
  std::string claim_note;
  // A database that has submitted nothing yet (a first run, or the study's database deleted, or
  // moved to another workdir) cannot know the jobs Slurm still holds under this study's name: they
  // are looked for before its first sbatch (SubmitNew). A takeover of the claim looks at once.
  first_submission_ = std::none_of(stored->begin(), stored->end(),
                                   [](const store::TrialRecord& t) { return t.attempt > 0 || !t.job_id.empty(); });
  SWEEP_RETURN_IF_ERROR(ClaimStudyFiles(transport_, ctx_.files, ClaimToken(*record, host, study_.database), host,
                                        study_.path, &claim_note, [this] { return RefuseUnknownLiveJobs(); }));
  if (!claim_note.empty()) Event(std::nullopt, "claim", claim_note);
  for (const auto& local : study_.job.stage) {
    Status st;
    std::string content = ReadLocalFile(local, &st);
    SWEEP_RETURN_IF_ERROR(st);
    SWEEP_RETURN_IF_ERROR(
        transport_.WriteFile(w + "/" + BaseName(local), content, 0755).WithContext("staging " + local));
  }
  size_t dropped = std::count_if(records.begin(), records.end(),
                                 [](const store::TrialRecord& t) { return t.state == kTrialDropped; });
  Event(std::nullopt, "prepare",
        fmt::format("study '{}': {} trials ({} dropped by constraints or the memory plan) via {}", study_.name,
                    specs->size(), dropped, transport_.Describe()));
  // An earlier version's trials outside this file's space are left out of the ranking and reports,
  // but those not ended keep their jobs and hold slots: said where the user starts the run.
  if (auto outside = TrialsOutsideSpace(study_, *stored); outside.ok() && !StillOpen(*outside).empty()) {
    std::string line = DescribeOutsideSpace(study_, *outside, study_.path);
    line.pop_back();
    Event(std::nullopt, "outside_space", line);
  }
  prepared_ = true;
  return Status::OK();
}

Result<TickReport> Runner::Tick() {
  if (!prepared_) SWEEP_RETURN_IF_ERROR(Prepare());
  ++tick_;
  TickReport report;
  int64_t calls_before = transport_.counts().total();
  // Every squeue and sacct of the tick: the batched query, and a count of the user's jobs or a look for
  // the study's live jobs when it submits.
  auto queries_before = client_.stats();
  auto trials = store_.ListTrials(ctx_.study_id);
  if (!trials.ok()) return trials.status();

  Status st = reconciler_.Reconcile(*trials);
  if (st.ok()) st = ingester_.RereadEmptyLogs(*trials, study_changed_);
  if (st.ok()) st = QueryAndIngest(*trials, report);
  if (st.ok()) st = ApplyStopping(*trials, report);
  if (st.ok()) SWEEP_RETURN_IF_ERROR(ingester_.CheckObjectiveLogged(*trials));
  if (st.ok()) SWEEP_RETURN_IF_ERROR(ingester_.CheckLogsYield(*trials, tpe_.MoreToPropose(*trials)));
  if (st.ok()) SWEEP_RETURN_IF_ERROR(StopFailureStorm(*trials));
  if (st.ok()) SWEEP_RETURN_IF_ERROR(StopOnNeverClearingReason(*trials));
  // A `cancel` since this run started wins over what it would submit (cancel_request.h).
  if (st.ok()) st = ObeyCancelRequest();
  // Never submit while the state of the cluster is unknown: that is how duplicates happen.
  if (st.ok()) st = SubmitNew(*trials, report);
  last_unavailable_ = Status::OK();
  if (!st.ok()) {
    if (!st.IsUnavailable()) return st;
    report.unavailable = true;
    last_unavailable_ = st;
    Event(std::nullopt, "unavailable",
          std::string(store::IsDatabaseBusy(st) ? "database busy" : "cluster unreachable") +
              ", will retry: " + st.message());
  }
  // tpe: budget left and configurations left to propose, unless a cancel ended the study
  bool to_propose = !cancel_obeyed_ && tpe_.MoreToPropose(*trials);
  report.done = st.ok() && !to_propose && std::all_of(trials->begin(), trials->end(), [&](const store::TrialRecord& t) {
                  return IsFinalTrialState(t.state) || !ctx_.specs.count(t.trial_key);
                });
  report.cluster_calls = transport_.counts().total() - calls_before;
  report.slurm_queries =
      (client_.stats().squeue - queries_before.squeue) + (client_.stats().sacct - queries_before.sacct);
  for (const auto& t : *trials) {
    if (t.job_id.empty() || IsFinalTrialState(t.state)) continue;
    if (t.state == slurm::JobStateName(slurm::JobState::kRunning)) ++report.running;
    else ++report.queued;
  }
  ViewOf(std::move(*trials), report);
  if (!tick_lines_) return report;
  log_ << fmt::format(
      "[{}] tick {}: {} running, {} queued, {} submitted, {} ended, {} points, {} squeue/sacct call(s), "
      "{} cluster call(s){}\n",
      FormatUtc(clock_.Now()), tick_, report.running, report.queued, report.submitted, report.ended, report.points,
      report.slurm_queries, report.cluster_calls, curves_note_);
  log_.flush();
  return report;
}

Status Runner::Run(int max_ticks) {
  PollSchedule schedule(study_.cluster.poll_interval_s, study_.cluster.max_poll_interval_s, rng_());
  // Prepare needs the cluster too (work dir, staged files): wait for it like any tick would.
  for (int failures = 0;; ++failures) {
    Status st = Prepare();
    if (st.ok()) break;
    if (!st.IsUnavailable() || (max_ticks > 0 && failures >= max_ticks)) return st;
    if (StopRequested()) return Status::OK();
    Event(std::nullopt, "unavailable", "cluster unreachable, will retry: " + st.message());
    SWEEP_RETURN_IF_ERROR(WaitForLogin(st));
    clock_.SleepFor(schedule.Next(false, true));
  }
  // However the loop ends, its memory goes back before run prints the status or writes the final report.
  struct Release {
    Runner* runner;
    ~Release() { runner->ReleaseLoopMemory(); }
  } release{this};
  // One pace for all of this user's studies on this cluster: wait for our slot before each tick.
  auto budget = QueryPace::Open(QueryPace::DefaultPath(transport_.Describe()), study_.cluster.query_gap_s);
  if (!budget.ok()) return budget.status();
  for (int i = 0; max_ticks == 0 || i < max_ticks; ++i) {
    if (StopRequested()) return Status::OK();
    // The wall clock, not clock_: the pace file's slots are shared with other processes, and a
    // test clock that fast-forwards would book slots in their future.
    auto wait = budget->Reserve(SystemClock().Now());
    if (!wait.ok()) return wait.status();
    if (*wait > 0) clock_.SleepFor(*wait);
    if (heartbeat_) {
      Status beat = heartbeat_();
      if (!beat.ok() && !beat.IsUnavailable()) return beat;
      if (!beat.ok()) Event(std::nullopt, "unavailable", "database busy, will retry the heartbeat: " + beat.message());
    }
    auto r = Tick();
    if (!r.ok()) return r.status();
    NoticeEdit();
    if (on_tick_) on_tick_(*r);
    SWEEP_RETURN_IF_ERROR(WaitForLogin(last_unavailable_));
    if (r->done) {
      Event(std::nullopt, "done", "every trial has ended");
      ReleaseLoopMemory();
      reports_.Refresh(/*final=*/true);
      return Status::OK();
    }
    if (reports_.Due()) reports_.Refresh(/*final=*/false);
    clock_.SleepFor(schedule.Next(r->submitted + r->ended + r->changed > 0, r->unavailable));
  }
  return Status::OK();
}

Status Runner::WaitForLogin(const Status& unavailable) {
  if (unavailable.ok() || unavailable.cause() != Status::Cause::kReauthNeeded) {
    reauth_since_.reset();
    return Status::OK();
  }
  double now = clock_.Now();
  if (!reauth_since_) reauth_since_ = now;
  if (now - *reauth_since_ < study_.cluster.reauth_wait_s) return Status::OK();
  std::vector<std::string> jobs;
  auto trials = store_.ListTrials(ctx_.study_id);
  if (trials.ok()) {
    for (const auto& t : *trials) {
      if (!t.job_id.empty() && !IsFinalTrialState(t.state)) jobs.push_back(t.job_id);
    }
  }
  std::string left = jobs.empty()
                         ? "no job of the study is left on Slurm"
                         : fmt::format("{} job(s) left on Slurm keep running and are tracked again on resume: {}",
                                       jobs.size(), fmt::join(jobs, ", "));
  std::string message = fmt::format(
      "re-authentication needed: the cluster has asked for a new login for {:.0f} s (reauth_wait_s = {:g}): {}. {}. "
      "Log in again as the message says, then run `slurmsweep run {}` to resume; nothing is lost",
      now - *reauth_since_, study_.cluster.reauth_wait_s, unavailable.message(), left, study_.path);
  Event(std::nullopt, "reauth_needed", message);
  return Status::Unavailable(message).WithCause(Status::Cause::kReauthNeeded);
}

// The trials as StudyTrials (study_trials.h) lists them, from this tick's: those whose [space] values
// are no longer in the study file are left out, unless none are (not the file that made them); a
// tpe study, whose trials the file does not list, shows them all.
void Runner::ViewOf(std::vector<store::TrialRecord> trials, TickReport& report) {
  tick_trials_ = std::move(trials);
  report.trials = &tick_trials_;
  report.left_out = 0;
  if (study_.sampler == "tpe") return;
  auto listed = [&](const store::TrialRecord& t) { return ctx_.specs.count(t.trial_key) > 0; };
  if (std::all_of(tick_trials_.begin(), tick_trials_.end(), listed) ||
      std::none_of(tick_trials_.begin(), tick_trials_.end(), listed)) {
    return;
  }
  view_.clear();
  std::copy_if(tick_trials_.begin(), tick_trials_.end(), std::back_inserter(view_), listed);
  report.left_out = static_cast<int>(tick_trials_.size() - view_.size());
  report.trials = &view_;
}

Status Runner::QueryAndIngest(std::vector<store::TrialRecord>& trials, TickReport& report) {
  std::vector<std::string> ids;
  for (const auto& t : trials) {
    if (!t.job_id.empty() && !IsFinalTrialState(t.state)) ids.push_back(t.job_id);
  }
  report.active = static_cast<int>(ids.size());
  if (ids.empty()) return Status::OK();
  auto jobs = client_.Query(ids);
  if (!jobs.ok()) return jobs.status();

  // Every log that has news, with its telemetry and start marks, in one ReadMany.
  Ingester::Reads reads = ingester_.Read(trials, *jobs);
  SWEEP_RETURN_IF_ERROR(reconciler_.HandleRestarts(trials, *jobs, reads));
  SWEEP_RETURN_IF_ERROR(ingester_.HoldForeignLogs(trials, reads));
  std::vector<Observed> observed = Observe(trials, *jobs);
  // Ingest before recording any end: a crash in between re-reads, never skips, the tail.
  std::vector<store::TrialRecord*> to_ingest;
  for (const Observed& o : observed) {
    if (o.new_state == kTrialNew || o.new_state == "pending" || o.new_state == "unknown") continue;
    to_ingest.push_back(o.t);
  }
  SWEEP_RETURN_IF_ERROR(ingester_.IngestAll(to_ingest, reads, report));
  MarkMissingLogs(observed, reads);
  return RecordChanges(trials, observed, report);
}

// A job that Slurm says completed but that left no log where the study reads it (its script moved
// the log, or wrote none) gave the study nothing: it is stored failed, saying so, never completed
// with 0 steps.
void Runner::MarkMissingLogs(std::vector<Observed>& observed, const Ingester::Reads& reads) const {
  for (Observed& o : observed) {
    if (o.new_state != "completed" || o.t->log_offset > 0) continue;
    auto log = reads.logs.find(o.t->id);
    if (log == reads.logs.end() || log->second.ok() || !log->second.status().IsNotFound()) continue;
    o.new_state = "failed";
    o.reason = fmt::format("Slurm says job {} completed, but it left no log at {}, where the study reads its metrics",
                           o.t->job_id, o.t->log_path);
  }
}

std::vector<Runner::Observed> Runner::Observe(std::vector<store::TrialRecord>& trials,
                                              const std::map<std::string, slurm::JobInfo>& jobs) const {
  std::vector<Observed> observed;
  for (auto& t : trials) {
    if (t.job_id.empty() || IsFinalTrialState(t.state)) continue;
    auto it = jobs.find(t.job_id);
    std::string new_state;
    std::string reason;
    if (it == jobs.end() && !t.stop_request.empty()) {
      // We cancelled it; a queued array task that never started leaves no record at all.
      new_state = std::string(slurm::JobStateName(slurm::JobState::kCancelled));
    } else if (it == jobs.end()) {
      new_state = std::string(kTrialLost);
      reason = "job " + t.job_id + " left the queue and the cluster keeps no accounting of how it ended";
    } else {
      const slurm::JobInfo& j = it->second;
      new_state = std::string(slurm::JobStateName(j.state));
      t.slurm_state = j.slurm_state;
      if (slurm::IsTerminal(j.state)) t.exit_code = j.exit_code;  // squeue says 0:0 while a job runs
      reason = j.reason == "None" ? "" : j.reason;
      if (j.state == slurm::JobState::kFailed)
        reason = DescribeExit(j.exit_code) + (reason.empty() ? "" : " (" + reason + ")");
      // Slurm's own times where it has them: a short job may start and end between two ticks.
      bool started = j.state != slurm::JobState::kPending && j.state != slurm::JobState::kUnknown;
      if (started) t.started_at = ParseSlurmTime(j.start_time).value_or(t.started_at.value_or(clock_.Now()));
      if (slurm::IsTerminal(j.state)) t.ended_at = ParseSlurmTime(j.end_time);
    }
    observed.push_back({&t, std::move(new_state), std::move(reason)});
  }
  return observed;
}

Status Runner::RecordChanges(std::vector<store::TrialRecord>& trials, std::vector<Observed>& observed,
                             TickReport& report) {
  for (auto& [tp, new_state, reason] : observed) {
    store::TrialRecord& t = *tp;
    bool ended = IsFinalTrialState(new_state);
    if (ended) SWEEP_RETURN_IF_ERROR(retry_.Classify(t, new_state, reason));
    if (new_state == t.state && reason == t.reason) continue;
    if (ended) {
      if (!t.ended_at) t.ended_at = clock_.Now();
      if (!t.started_at) t.started_at = t.ended_at;
      ++report.ended;
    }
    ++report.changed;
    Event(t.id, ended ? "end" : "state",
          fmt::format("job {}: {}{}{}", t.job_id, new_state == t.state ? "" : t.state + " -> ", new_state,
                      reason.empty() ? "" : " (" + reason + ")"));
    t.state = new_state;
    t.reason = reason;
    SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(t));
    if (!ended) continue;
    if (t.state == kTrialCudaOom) SWEEP_RETURN_IF_ERROR(memory_.SkipDominatedByOom(t, trials));
    SWEEP_RETURN_IF_ERROR(memory_.CalibrateMemory(t, trials));
    auto chained = retry_.MaybeChain(t);
    if (!chained.ok()) return chained.status();
    // Only ends of attempts this run submitted: an earlier run's ran under the settings of then
    // (a template fixed since, before `--resubmit failed`), and say nothing of the current ones.
    if (!*chained && t.submitted_at && *t.submitted_at >= run_started_at_) storm_.Ended(t.id, t.state);
    if (!*chained) SWEEP_RETURN_IF_ERROR(retry_.MaybeRetry(t));
  }
  return Status::OK();
}

// Jobs of an earlier database of this study (deleted, or in another workdir) may still be queued
// or running: they would write into this study's logs beside its own jobs, and the Reconciler finds
// jobs by name. Refused, naming them, rather than mixed.
Status Runner::RefuseUnknownLiveJobs() {
  auto live = client_.LiveJobsNamed("ss-" + study_.name + "-", "slurmsweep:study=" + study_.name + ":");
  if (!live.ok()) return live.status();
  if (live->empty()) return Status::OK();
  std::vector<std::string> named, ids;
  for (const auto& j : *live) {
    named.push_back(fmt::format("{} ({}, {})", j.job_id, j.name, slurm::JobStateName(j.state)));
    ids.push_back(j.job_id);
  }
  return Status::FailedPrecondition(fmt::format(
      "{}: study '{}' has {} job(s) on the cluster that this database does not know, from an earlier database "
      "of this study: {}. They would run beside this database's jobs, write into the same logs and be taken for its "
      "own by name; "
      "nothing was submitted. "
      "Wait for them to end, or cancel them (scancel {}), then run again",
      study_.path, study_.name, live->size(), fmt::join(named, ", "), fmt::join(ids, " ")));
}

// Fills the free slots: every new trial up to max_concurrent + queue_ahead (Submitter).
Status Runner::SubmitNew(std::vector<store::TrialRecord>& trials, TickReport& report) {
  if (submitter_.Paused(trials) || cancel_obeyed_) return Status::OK();
  int free_slots = submitter_.FreeSlots(trials);
  if (free_slots <= 0) return Status::OK();
  if (first_submission_) {
    SWEEP_RETURN_IF_ERROR(RefuseUnknownLiveJobs());
    first_submission_ = false;
  }
  // A tpe study proposes only what can run now (one array of K = free slots), so every result
  // shapes the next proposals.
  if (study_.sampler == "tpe") SWEEP_RETURN_IF_ERROR(tpe_.Propose(trials, free_slots));
  return submitter_.SubmitNew(trials, free_slots, report);
}

void Runner::NoticeEdit() {
  Status read;
  std::string text = ReadLocalFile(study_.path, &read);
  if (!read.ok()) return;  // moved or being written: the next tick looks again
  std::string hash = study::StudyFileHash(text);
  if (file_hash_.empty()) file_hash_ = study_.hash;
  if (hash == file_hash_) return;
  std::string was = std::exchange(file_hash_, hash);
  std::string head = fmt::format(
      "{} was edited while this run goes on (hash {} -> {}); this run goes on with the file as it started, and a "
      "new `slurmsweep run` uses the edit",
      study_.path, was, hash);
  auto edited = study::LoadStudy(study_.path);
  if (!edited.ok()) {
    Event(std::nullopt, "edited",
          fmt::format("{}. The edited file does not load: {}", head, edited.status().message()));
    return;
  }
  (void)results::ResolveSeeds(*edited);
  auto trials = store_.ListTrials(ctx_.study_id);
  if (!trials.ok()) return;
  auto outside = TrialsOutsideSpace(*edited, *trials);
  if (!outside.ok()) {
    Event(std::nullopt, "edited", fmt::format("{}. Its trials cannot be listed: {}", head, outside.status().message()));
    return;
  }
  std::vector<store::TrialRecord> open = StillOpen(*outside);
  if (open.empty()) {
    Event(std::nullopt, "edited", head + ". No trial that has not ended falls outside the new [space]");
    return;
  }
  std::vector<std::string> keys;
  for (const auto& t : open) keys.push_back(fmt::format("{} ({})", t.trial_key, t.state));
  Event(std::nullopt, "edited",
        fmt::format("{}. {} trial(s) not ended fall outside the new [space] and hold slots of max_concurrent: {}; "
                    "`slurmsweep cancel --outside-space {}` cancels them",
                    head, open.size(), fmt::join(keys, ", "), study_.path));
}

Result<int> Runner::Resubmit(const std::set<std::string>& states) {
  auto id = store_.UpsertStudy(study_.name, study_.path, StoredSettingsHash(study_), clock_.Now());
  if (!id.ok()) return id.status();
  ctx_.study_id = *id;
  auto trials = store_.ListTrials(ctx_.study_id);
  if (!trials.ok()) return trials.status();
  int n = 0;
  Status st = store_.InTransaction([&]() -> Status {
    for (auto& t : *trials) {
      if (!states.count(t.state)) continue;
      std::string was = t.state;
      SWEEP_RETURN_IF_ERROR(retry_.StartOver(t, fmt::format("resubmitted by the user after {}", was)));
      Event(t.id, "resubmit",
            fmt::format("{} was {}: submitted again from scratch (run --resubmit)", t.trial_key, was));
      ++n;
    }
    return Status::OK();
  });
  if (!st.ok()) return st;
  return n;
}

// The stopping series are most of a large run's memory (issue 42: 330 MB of 10,000 trials' curves):
// freed, and the pages given back to the system, not kept for the status and report that follow.
void Runner::ReleaseLoopMemory() {
  stopping_.ForgetAll();
  ::malloc_trim(0);
}

bool Runner::StopRequested() {
  if (!interrupted_ || !interrupted_()) return false;
  if (prepared_) Event(std::nullopt, "interrupted", "stopped by a signal; the jobs stay on Slurm");
  return true;
}

void Runner::NoteCurvesRead(size_t read, size_t needed) {
  if (read < needed) {
    curves_note_ = fmt::format("; early stopping waits for the stored curves: {} of {} trials read", read, needed);
    if (curves_waiting_since_) return;
    curves_waiting_since_ = tick_;
    Event(std::nullopt, "stopping_waits",
          fmt::format("early stopping resumes once the stored curves are read: {} of {} trials read; the rules decide "
                      "nothing until they have every curve they weigh",
                      read, needed));
    return;
  }
  curves_note_.clear();
  if (!curves_waiting_since_) return;
  Event(std::nullopt, "stopping_resumed",
        fmt::format("early stopping resumed: the stored curves of {} trials read, over {} tick(s)", needed,
                    tick_ - *std::exchange(curves_waiting_since_, std::nullopt) + 1));
}

// Early stopping: the rules see every trial's stored curve, once read (after a restart, over a few
// ticks: curve_loader.h; until then they decide nothing); the losers get their reason recorded
// first (so the end is classed "pruned" even after a crash), then one scancel for all of them.
Status Runner::ApplyStopping(std::vector<store::TrialRecord>& trials, TickReport& report) {
  const StoppingConfig& cfg = study_.stopping;
  if (!cfg.AnyRule()) return Status::OK();
  std::vector<stopping::TrialProgress> progress;
  std::vector<std::string> config_of;  // of each progress entry
  std::map<int64_t, store::TrialRecord*> by_id;
  std::vector<int64_t> ids;  // of each progress entry
  for (auto& t : trials) {
    bool live = t.state == "running" && t.stop_request.empty();
    bool done = t.state == "completed";
    // Being cancelled (stop requested, job not gone yet) or ended early: still evidence, never
    // stopped twice.
    bool stopping = t.state == "running" && !t.stop_request.empty();
    bool stopped = stopping || (!live && !done && IsFinalTrialState(t.state) && t.state != kTrialDropped &&
                                t.state != kTrialSkipped);
    if (!live && !done && !stopped) continue;
    auto spec = ctx_.specs.find(t.trial_key);
    if (spec == ctx_.specs.end()) continue;
    stopping::TrialProgress p;
    p.id = t.id;
    p.name = t.trial_key;
    p.phase = live   ? stopping::TrialPhase::kRunning
              : done ? stopping::TrialPhase::kCompleted
                     : stopping::TrialPhase::kStopped;
    p.gpus = ctx_.Gpus();
    for (const auto& [name, v] : spec->second.params) {
      if (name != study_.seed_var) p.params.emplace_back(name, ParamToString(v));  // repeats: one configuration
    }
    ids.push_back(t.id);  // its curves are stopping_'s: not copied
    by_id[t.id] = &t;
    progress.push_back(std::move(p));
    config_of.push_back(study::ConfigIdentity(study_, t.params_json));
  }
  auto read = curves_.Load(ids);
  if (!read.ok()) return read.status();
  NoteCurvesRead(*read, ids.size());
  if (*read < ids.size()) return Status::OK();
  // A repeat is never judged against its siblings (stopping/siblings.h).
  std::vector<stopping::StopDecision> decisions =
      stopping::EvaluateApartFromSiblings(stopping_, std::move(progress), config_of);
  if (decisions.empty()) return Status::OK();
  // The tick's stop requests and their events in one transaction, before any scancel: a commit each was
  // 6 s when a restart's first decision pruned 9,950 trials at once (bench/scale_bench.sh stopping).
  std::vector<std::string> jobs;
  SWEEP_RETURN_IF_ERROR(store_.InTransaction([&]() -> Status {
    for (const stopping::StopDecision& d : decisions) {
      store::TrialRecord& t = *by_id.at(d.trial_id);
      t.stop_request = fmt::format("pruned by the {} rule: {}", d.rule, d.reason);
      SWEEP_RETURN_IF_ERROR(store_.UpdateTrial(t));
      Event(t.id, "prune", t.stop_request);
      jobs.push_back(t.job_id);
    }
    return Status::OK();
  }));
  report.changed += static_cast<int>(jobs.size());
  return client_.Cancel(jobs);
}

}  // namespace sweep::run
