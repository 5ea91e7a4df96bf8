// Runner: the run loop. Each tick asks Slurm about every active trial with one query,
// ingests new log bytes of running and just-ended trials, then submits new trials up to the
// concurrency limit. All state lives in the store, so a killed orchestrator resumes where
// it stopped: a trial that has a job is never submitted again. The work is its collaborators'
// (run_context.h): Reconciler (adoption, restarts), Ingester (logs, telemetry, what they yield),
// RetryPolicy (end classes, retries, chains), MemoryFeedback (the memory plan and OOMs),
// TpeProposer (tpe_trials.h), Submitter (scripts, job arrays) and ReportRefresher.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/status.h"
#include "run/curve_loader.h"
#include "run/start_failures.h"
#include "run/ingester.h"
#include "run/memory_feedback.h"
#include "run/reconciler.h"
#include "run/report_refresher.h"
#include "run/retry_policy.h"
#include "run/run_context.h"
#include "run/submitter.h"
#include "run/tpe_trials.h"
#include "slurm/slurm_client.h"
#include "slurm/transport.h"
#include "stopping/early_stop.h"
#include "store/store.h"
#include "study/study.h"

namespace sweep::run {

// The studies table's spec_hash of `study`: its settings_hash (what the trials that ran depend on),
// marked apart from the file hash earlier versions stored.
std::string StoredSettingsHash(const study::Study& study);

class Runner {
 public:
  Runner(const study::Study& study, store::Store& store, slurm::Transport& transport, Clock& clock, std::ostream& log);
  // Waits for a report refresh still being written in the background.
  ~Runner();
  Runner(const Runner&) = delete;
  Runner& operator=(const Runner&) = delete;

  // Records the study and its trials (new ones only), creates the work directories on the
  // cluster and stages the study's files there. Idempotent.
  Status Prepare();

  // One round of query, ingest, submit. kUnavailable errors (link or scheduler down) are
  // logged and swallowed: nothing is marked, the next tick tries again.
  Result<TickReport> Tick();

  // Prepare, then tick every poll interval until every trial has ended (or `max_ticks`).
  Status Run(int max_ticks = 0);

  // scancel every live job of the study (one call; arrays by their id) and mark unsubmitted trials
  // cancelled. Returns how many trials that concerned.
  Result<int> CancelAll();
  // The same for the trials of `keys` only (`cancel --outside-space`).
  Result<int> CancelOnly(const std::set<std::string>& keys);

  // The id of the last `cancel` request this run takes no notice of (cancel_request.h): the last
  // one recorded before the run started. A newer one cancels the study and ends the run.
  void set_cancel_seen(int64_t request_id) { cancel_seen_ = request_id; }

  // After CancelAll: queries (one squeue/sacct per round) and reads the logs, without submitting
  // anything, until every trial with a job has ended or `max_wait_s` has passed, so the ends and
  // the last log lines are recorded now rather than by the next `run`. Returns the trials whose
  // job has not ended yet.
  Result<int> AwaitEnds(double max_wait_s, double poll_s = 1);

  // `run --resubmit cancelled,failed`: trials that ended in one of `states` start over as new
  // trials (fresh attempt, metrics dropped; the earlier attempts' run time stays in their cost).
  // Returns how many. Call before Run.
  Result<int> Resubmit(const std::set<std::string>& states);

  // Submit configurations the memory planner predicts will run out of memory (its prediction
  // may be pessimistic for a given software stack); parallelism-rule violations stay dropped.
  void set_submit_predicted_oom(bool v) { ctx_.submit_predicted_oom = v; }

  // Asked between ticks: when it says true, Run returns OK after the tick in progress (nothing is
  // cancelled; the jobs stay on Slurm) and records an "interrupted" event.
  void set_interrupted(std::function<bool()> interrupted) { interrupted_ = std::move(interrupted); }

  // Called before every tick (the controller's lease, lease.h): an error that is not kUnavailable
  // (another run took the study over) ends Run before the tick queries or submits anything.
  void set_heartbeat(std::function<Status()> heartbeat) { heartbeat_ = std::move(heartbeat); }

  // The status view's hooks (cli/status_view.h, notifications): called by Run after every tick
  // (with the tick's trials in TickReport::trials: no need to list them from the store), and for
  // every event the run records (after it is logged and stored). They must not throw.
  using TickHook = std::function<void(const TickReport&)>;
  using EventHook = std::function<void(std::optional<int64_t> trial_id, const std::string& kind, const std::string&)>;
  void set_on_tick(TickHook hook) { on_tick_ = std::move(hook); }
  void set_on_event(EventHook hook) { on_event_ = std::move(hook); }
  // Whether each tick logs its counters line (on a terminal the progress block replaces it).
  void set_tick_lines(bool on) { tick_lines_ = on; }
  // What a background report refresh writes, over its own read-only connection; default WriteReports of the
  // study's HTML. Tests replace it to hold a refresh open while the loop ticks on.
  using ReportWriter = ReportRefresher::Writer;
  void set_report_writer(ReportWriter writer) { reports_.set_writer(std::move(writer)); }

  int64_t study_id() const { return ctx_.study_id; }
  // What the stopping rules see of each trial (tests).
  stopping::StoppingState& stopping_state() { return stopping_; }
  // How much of the stored curves a tick reads after a restart (curve_loader.h); tests slice by rows.
  void set_curve_slice(double first_s, double then_s, int64_t rows) { curves_.set_slice(first_s, then_s, rows); }
  const slurm::SlurmClient::Stats& slurm_stats() const { return client_.stats(); }
  const slurm::CountingTransport::Counts& cluster_calls() const { return transport_.counts(); }

 private:
  // Query, then what the answer means: restarts, foreign logs, ingest, then each end recorded.
  Status QueryAndIngest(std::vector<store::TrialRecord>& trials, TickReport& report);
  // What squeue says of each tracked trial, decided before anything is written.
  struct Observed {
    store::TrialRecord* t;
    std::string new_state, reason;
  };
  std::vector<Observed> Observe(std::vector<store::TrialRecord>& trials,
                                const std::map<std::string, slurm::JobInfo>& jobs) const;
  // A completed job whose log was never found is observed failed, with why (runner.cc).
  void MarkMissingLogs(std::vector<Observed>& observed, const Ingester::Reads& reads) const;
  // The state changes of `observed`, stored with their events; an end is classified and then
  // learned from (OOM, memory), chained, counted for the failure storm or retried.
  Status RecordChanges(std::vector<store::TrialRecord>& trials, std::vector<Observed>& observed, TickReport& report);
  Status ApplyStopping(std::vector<store::TrialRecord>& trials, TickReport& report);
  // Keeps the tick's trials for the tick hook (TickReport::trials): this study file's.
  void ViewOf(std::vector<store::TrialRecord> trials, TickReport& report);
  // Says, once, that the rules wait for the stored curves (`read` of `needed` trials' so far), and
  // once they are all read, that the rules decide again.
  void NoteCurvesRead(size_t read, size_t needed);
  // Fills the free slots: tpe proposals first, then the Submitter.
  Status SubmitNew(std::vector<store::TrialRecord>& trials, TickReport& report);
  // A `cancel` requested since this run started (cancel_request.h): cancels every trial once,
  // answers the request, and from then on submits and proposes nothing.
  Status ObeyCancelRequest();
  Result<int> Cancel(const std::function<bool(const store::TrialRecord&)>& which, bool whole_arrays);
  // The study file edited under this run: says so once per edit, naming the trials not ended that
  // fall outside the new [space] (outside_space.h). This run goes on with the file it started with.
  void NoticeEdit();
  // The first trials to end all failed alike (failure_storm.h); runner_storm.cc. Before submitting:
  // on a storm, cancels the queued tasks that have not started (their trials go back to new) and
  // stops the run with the class, a failing log's last lines and the way on.
  Status StopFailureStorm(std::vector<store::TrialRecord>& trials);
  // A trial pending for a reason that never clears (slurm/pending_reason.h): stops the run with the
  // reason and the way on, before anything more is submitted; its jobs stay queued. runner_storm.cc.
  Status StopOnNeverClearingReason(const std::vector<store::TrialRecord>& trials);
  // The way on when `t` waits with ReqNodeNotAvail for a node the cluster does not have (asked of
  // Slurm at first sight, then at most every kNodeRecheckS: a drained node may be removed later), else "".
  // The pending ReqNodeNotAvail job whose nodes are due a look (at most one per half minute), or null.
  const store::TrialRecord* NodeCheckDue(const std::vector<store::TrialRecord>& trials);
  Result<std::string> UnknownNodeWayOn(const store::TrialRecord& t);
  // FailedPrecondition naming the study's jobs that Slurm holds and this database does not know (by
  // job name and --comment): before a database's first sbatch and before a takeover of the claim.
  Status RefuseUnknownLiveJobs();
  void Event(std::optional<int64_t> trial_id, const std::string& kind, const std::string& message);
  bool StopRequested();
  // Frees the stopping series once the loop has ended (Run).
  void ReleaseLoopMemory();
  // A failure of the cluster to answer, seen by Run: an outage is waited out; a login only a human
  // can give (Cause::kReauthNeeded) is waited for study.cluster.reauth_wait_s, then the run stops
  // with "re-authentication needed", the jobs left on Slurm and the way on (that Status; else OK).
  Status WaitForLogin(const Status& unavailable);

  const study::Study& study_;
  store::Store& store_;
  slurm::CountingTransport transport_;
  slurm::SlurmClient client_;
  Clock& clock_;
  std::ostream& log_;
  RunContext ctx_;
  // Early stopping's series of each trial it has seen: rebuilt from the store on first use (a
  // restarted run decides as the one that stopped), then extended by each tick's new points.
  stopping::StoppingState stopping_;
  // Gives stopping_ each trial's stored curves, read once (after a start, a restart or a reset) in
  // slices across ticks; Ingester extends them from then on.
  CurveLoader curves_;
  std::optional<int> curves_waiting_since_;  // the tick whose rules first waited for stored curves
  std::string curves_note_;                  // the tick line's note while they wait
  Submitter submitter_;
  Ingester ingester_;
  Reconciler reconciler_;
  MemoryFeedback memory_;
  RetryPolicy retry_;
  TpeProposer tpe_;
  ReportRefresher reports_;
  StartFailures storm_;
  bool prepared_ = false;
  bool first_submission_ = false;  // this database has submitted nothing yet: look for live jobs first
  double run_started_at_ = 0;      // when Prepare ran: the failure storm counts ends of attempts submitted since
  bool study_changed_ = false;     // what the trials ran with changed since the last run (settings_hash)
  int64_t cancel_seen_ = 0;        // the last cancel request before this run (cancel_request.h)
  bool cancel_obeyed_ = false;     // a newer one came: nothing more is submitted or proposed
  std::string file_hash_;          // the study file's as this run last read it (NoticeEdit)
  std::function<bool()> interrupted_;
  std::function<Status()> heartbeat_;
  TickHook on_tick_;
  EventHook on_event_;
  bool tick_lines_ = true;
  int tick_ = 0;
  std::vector<store::TrialRecord> tick_trials_;  // the last tick's trials (TickReport::trials)
  std::vector<store::TrialRecord> view_;         // of which this study file's, when some are not
  Status last_unavailable_;                      // why the last tick could not reach the cluster
  std::optional<double> reauth_since_;           // when the cluster first wanted a new login, in a row
  std::map<std::string, double> node_checked_;   // jobs pending ReqNodeNotAvail: when their nodes were looked up
  std::minstd_rand rng_{std::random_device{}()};
};

}  // namespace sweep::run
