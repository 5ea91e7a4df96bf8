// Runner: the run loop. Each tick asks Slurm about every active trial with one query,
// ingests new log bytes of running and just-ended trials, then submits new trials up to the
// concurrency limit. All state lives in the store, so a killed orchestrator resumes where
// it stopped: a trial that has a job is never submitted again.
// Module orchestrator/: the application; may use every module.
#pragma once

#include <algorithm>
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <ostream>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/trial_state.h"
#include "base/status.h"
#include "stopping/early_stop.h"
#include "logs/metrics_parser.h"
#include "orchestrator/failure_storm.h"
#include "orchestrator/log_yield.h"
#include "orchestrator/objective_watch.h"
#include "orchestrator/study_files.h"
#include "planner/planner.h"
#include "sampler/tpe.h"
#include "study/space.h"
#include "study/study.h"
#include "slurm/sbatch_script.h"
#include "slurm/slurm_client.h"
#include "slurm/transport.h"
#include "store/store.h"

namespace sweep {

struct TickReport {
  int active = 0;   // trials with a job that had not ended before this tick
  int running = 0;  // after the tick: trials whose job runs
  int queued = 0;   // after the tick: trials whose job waits in the queue
  int submitted = 0;
  int ended = 0;
  int changed = 0;            // trials whose state or reason changed
  int64_t points = 0;         // metric rows ingested
  int slurm_queries = 0;      // squeue + sacct calls this tick
  int64_t cluster_calls = 0;  // commands, file writes and reads sent to the cluster this tick
  bool done = false;          // every trial has ended
  bool unavailable = false;   // the cluster could not be reached; nothing was marked
};

class Runner {
 public:
  Runner(const Study& study, store::Store& store, slurm::Transport& transport, Clock& clock, std::ostream& log);
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
  void set_submit_predicted_oom(bool v) { submit_predicted_oom_ = v; }

  // Asked between ticks: when it says true, Run returns OK after the tick in progress (nothing is
  // cancelled; the jobs stay on Slurm) and records an "interrupted" event.
  void set_interrupted(std::function<bool()> interrupted) { interrupted_ = std::move(interrupted); }

  // The cockpit's hooks (orchestrator/cockpit.h, notifications): called by Run after every tick,
  // and for every event the run records (after it is logged and stored). They must not throw.
  using TickHook = std::function<void(const TickReport&)>;
  using EventHook = std::function<void(std::optional<int64_t> trial_id, const std::string& kind, const std::string&)>;
  void set_on_tick(TickHook hook) { on_tick_ = std::move(hook); }
  void set_on_event(EventHook hook) { on_event_ = std::move(hook); }
  // Whether each tick logs its counters line (on a terminal the progress block replaces it).
  void set_tick_lines(bool on) { tick_lines_ = on; }
  // What a background report refresh writes, over its own read-only connection; default WriteReports of the
  // study's HTML. Tests replace it to hold a refresh open while the loop ticks on.
  using ReportWriter = std::function<Status(store::Store& db, double now)>;
  void set_report_writer(ReportWriter writer) { report_writer_ = std::move(writer); }

  int64_t study_id() const { return study_id_; }
  // What the stopping rules see of each trial (tests).
  stopping::StoppingState& stopping_state() { return stopping_; }
  const slurm::SlurmClient::Stats& slurm_stats() const { return client_.stats(); }
  const slurm::CountingTransport::Counts& cluster_calls() const { return transport_.counts(); }

 private:
  Status Reconcile(std::vector<store::TrialRecord>& trials);
  // Trials being submitted whose job already ran: their job ids, by trial id, from the start marks
  // jobs leave beside their logs (one ReadMany). Finds jobs that squeue has purged.
  Result<std::map<int64_t, std::string>> JobsFromStartMarks(const std::vector<store::TrialRecord>& trials);
  // Slurm ran a job again under the same id: the run that ended becomes an ended attempt (a new
  // attempt follows, or the trial ends when [retry] allows no more). `rewritten`: trials whose log
  // is shorter than their offset; their `prefetched` chunks are dropped when a restart is found.
  // `hold`: restarted trials whose new run has not started yet, not to be read this tick.
  // Start marks are read once per tick: `marks` (by trial id) holds what was read so far.
  using MarksRead = std::map<int64_t, Result<std::string>>;
  Status HandleRestarts(std::vector<store::TrialRecord>& trials, const std::map<std::string, slurm::JobInfo>& jobs,
                        const std::set<int64_t>& rewritten, std::map<int64_t, Result<std::string>>& prefetched,
                        std::set<int64_t>& hold);
  Status FindRestarts(std::vector<store::TrialRecord>& trials, const std::map<std::string, slurm::JobInfo>& jobs,
                      const std::set<int64_t>& rewritten, std::map<int64_t, Result<std::string>>& prefetched,
                      MarksRead& marks);
  // Reads the start marks of those of `trials` not in `marks` yet, with one ReadMany.
  void ReadStartMarks(const std::vector<const store::TrialRecord*>& trials, MarksRead& marks);
  Status QueryAndIngest(std::vector<store::TrialRecord>& trials, TickReport& report);
  // A study never reads a log it did not write: trials about to read a log from its start whose
  // start marks say another run wrote it (another study's job on the same path) go to `hold`,
  // with an event. One ReadMany for every such trial.
  Status HoldForeignLogs(const std::vector<store::TrialRecord>& trials,
                         std::map<int64_t, Result<std::string>>& prefetched, std::set<int64_t>& hold);
  // Stores the log's new lines; `first`: the first chunk, already read (QueryAndIngest reads every
  // trial's first chunk in one ReadMany), else read here.
  Result<int64_t> Ingest(store::TrialRecord& trial, const Result<std::string>* first = nullptr);
  // Stores the telemetry file's new samples ([job] monitor = true), as Ingest does the log's.
  Result<int64_t> IngestTelemetry(store::TrialRecord& trial, const Result<std::string>* first = nullptr);
  static std::string TelemetryPath(const store::TrialRecord& trial);
  // Whether the telemetry file starting with `head` was written by the trial's current run (its header).
  static bool TelemetryOfThisRun(const store::TrialRecord& trial, std::string_view head);
  Result<std::string> LogTail(const store::TrialRecord& trial);
  Status Classify(const store::TrialRecord& trial, std::string& state, std::string& reason);
  Status MaybeRetry(store::TrialRecord& trial);
  // Back to new for a fresh attempt: metrics dropped, the attempt's run time kept as a cost.
  Status StartOver(store::TrialRecord& trial, std::string reason);
  Result<bool> MaybeChain(store::TrialRecord& trial);
  Status SkipDominatedByOom(const store::TrialRecord& oom, std::vector<store::TrialRecord>& trials);
  // NeedsAtLeastAsMuchMemory, with the space's float ranges (lr, weight decay) left out: a sampler
  // draws a new value for every trial, so requiring them equal would let an OOM rule out only
  // itself, and the memory plan does not read them either.
  bool DominatedByOom(const TrialSpec& candidate, const TrialSpec& oom) const;
  // Feeds a finished trial's measured peak GPU memory (Megatron's memory report) back into the
  // plan: when it exceeds the prediction by more than the headroom, the headroom grows to that
  // excess and unsubmitted configurations that no longer fit are skipped.
  Status CalibrateMemory(const store::TrialRecord& trial, std::vector<store::TrialRecord>& trials);
  // By how many bytes a finished trial's measured peak exceeded the plan's prediction; nullopt
  // without a prediction or a measurement.
  Result<std::optional<double>> MeasuredExcess(const store::TrialRecord& trial);
  // tpe: the memory plan of proposed trials (kept in tpe_rows_), so CalibrateMemory learns from them.
  Status PlanProposed(const std::vector<TrialSpec>& specs);
  Status SubmitNew(std::vector<store::TrialRecord>& trials, TickReport& report);
  // sampler = "tpe": this study's trials so far, rebuilt from the store, and the warm start.
  Status PrepareTpe();
  // Proposes up to `free_slots` new trials (fewer with trials already waiting, or near the budget)
  // from every trial in the store, stores them new and appends them to `trials`.
  Status ProposeTrials(std::vector<store::TrialRecord>& trials, int free_slots);
  // Whether the tpe sampler may propose `spec`: constraints, the planner's rules and memory verdict,
  // and no CUDA OOM of a trial needing no more memory (`ooms`).
  bool TpeFeasible(const TrialSpec& spec, const std::vector<const TrialSpec*>& ooms);
  // One sbatch for `batch`: a plain job for one trial, else a job array throttled to `throttle`
  // running tasks. Submit limits pause submission (no error); other refusals fail the trials.
  Status SubmitBatch(std::vector<store::TrialRecord*>& batch, int throttle, TickReport& report);
  // Back to "new" with the attempt and array fields undone, for a submission that never happened.
  void UndoSubmission(store::TrialRecord& t);
  Status ApplyStopping(std::vector<store::TrialRecord>& trials, TickReport& report);
  // Gives stopping_ the trial's stored curves, read once (after a start, a restart or a reset);
  // Ingest extends them from then on.
  Status LoadCurve(int64_t trial_id);
  int Gpus() const { return std::max(1, study_.job.nodes * study_.job.gpus_per_node); }
  // The HTML report every [report] refresh_minutes, written by a thread of its own over a
  // read-only connection (study_.database), so a large study's report never stalls the ticks; a
  // refresh due while the previous one is still being written is skipped. The final one (HTML and
  // CSV) waits for it, then writes in the loop's thread.
  void RefreshReports(bool final);
  // Logs a background refresh that failed, once it has finished (Event is the loop thread's).
  void LogBackgroundReport();
  // The template rendered with the trial's values; RenderScript adds slurmsweep's #SBATCH header
  // (and the start mark) to that body.
  Result<std::string> RenderBody(const store::TrialRecord& trial);
  Result<std::string> RenderScript(const store::TrialRecord& trial, std::string_view body);
  // The #SBATCH lines the trial's next attempt will carry, from the template's directive block
  // alone (the body is rendered once, when the attempt is submitted): trials with the same lines
  // share a job array. Empty optional: a directive names the trial's log, so it goes alone.
  Result<std::optional<std::vector<std::string>>> NextDirectives(const store::TrialRecord& trial);
  // The #SBATCH header's study-wide part: work dir, partition/account/qos and [job] resources.
  slurm::SbatchHeader Header() const;
  std::string JobName(const std::string& trial_key) const;
  // "slurmsweep:study=S:trial=T:attempt=N": set as the job's --comment, matched on reconcile.
  std::string CommentTag(const store::TrialRecord& trial) const;
  // "slurmsweep:study=S:array=NAME": the comment of an array job (every task carries it).
  std::string ArrayTag(const std::string& array_name) const;
  void Event(std::optional<int64_t> trial_id, const std::string& kind, const std::string& message);
  bool StopRequested();

  const Study& study_;
  store::Store& store_;
  slurm::CountingTransport transport_;
  slurm::SlurmClient client_;
  Clock& clock_;
  std::ostream& log_;
  int64_t study_id_ = 0;
  StudyFiles files_;                    // where this study's files are on the cluster (Prepare)
  std::set<int64_t> foreign_reported_;  // trials whose log another run wrote, already reported
  bool prepared_ = false;
  bool submit_predicted_oom_ = false;
  std::function<bool()> interrupted_;
  TickHook on_tick_;
  EventHook on_event_;
  bool tick_lines_ = true;
  std::map<std::string, TrialSpec> specs_;           // by trial key: this study file's trials
  std::optional<Plan> plan_;                         // the memory plan, for studies that name a model
  std::map<std::string, const PlanRow*> plan_rows_;  // by trial key, into plan_
  std::map<std::string, PlanRow> tpe_rows_;          // tpe: the plan of each proposed trial (plan_rows_ too)
  double headroom_bytes_ = 0;                        // the plan's headroom, grown by CalibrateMemory
  std::vector<sampler::Observation> warm_;           // tpe: another study's trials ([search] seed_from)
  bool tpe_exhausted_ = false;                       // tpe: no feasible configuration left to propose
  std::map<int64_t, ParserState> parsers_;
  // The first trials' logs against the objective and the time rules (objective_watch.h).
  ObjectiveWatch watch_;
  bool watch_primed_ = false;  // trials that already stored the objective (a resumed run) counted
  // Before submitting: stops the run when no trial logs the objective; warns once about time.
  Status CheckObjectiveLogged(const std::vector<store::TrialRecord>& trials);
  // Logs that have lines must yield points (log_yield.h); runner_logs.cc.
  LogYieldWatch yield_;
  bool study_changed_ = false;   // the study file's hash differs from the last run's
  bool reread_checked_ = false;  // RereadEmptyLogs done (once per run)
  bool yield_warned_ = false;    // the verdict logged with nothing left to submit (once)
  // Before submitting: stops the run when a trial's log has lines and yields no point.
  Status CheckLogsYield(const std::vector<store::TrialRecord>& trials);
  // First tick: the logs of trials that stored no point are read again from their start when the
  // study file changed (its metric_format fixed); otherwise the first such log that ended is shown
  // to yield_, so a study stopped for it stops again before submitting anything.
  Status RereadEmptyLogs(std::vector<store::TrialRecord>& trials);
  // The first trials to end all failed alike (failure_storm.h); runner_storm.cc.
  FailureStorm storm_;
  // Before submitting: on a storm, cancels the queued tasks that have not started (their trials go
  // back to new) and stops the run with the class, a failing log's last lines and the way on.
  Status StopFailureStorm(std::vector<store::TrialRecord>& trials);
  // Early stopping's series of each trial it has seen: rebuilt from the store on first use (a
  // restarted run decides as the one that stopped), then extended by each tick's new points.
  stopping::StoppingState stopping_;
  int tick_ = 0;
  // Submit quotas (QOSMaxSubmitJobPerUserLimit, ...): no sbatch before this time; arrays no larger
  // than submit_chunk_ until one is accepted again.
  double submit_paused_until_ = 0;
  double submit_pause_s_ = 0;
  int submit_chunk_ = 0;
  double last_report_ = 0;  // first refresh on the first tick
  std::thread report_thread_;
  ReportWriter report_writer_;
  std::atomic<bool> report_running_{false};
  std::mutex report_mu_;
  std::optional<Status> report_result_;  // of the last background refresh, until logged
  std::minstd_rand rng_{std::random_device{}()};
};

}  // namespace sweep
