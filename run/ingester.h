// Ingester: what the trials' logs say, stored exactly once. Each tick reads every live trial's new
// log bytes, its telemetry and (for a log read from its start) its start marks with one ReadMany;
// a log another run wrote is held back, unread; the rest is parsed and stored in one transaction
// (rolled back as a whole: offsets and parsers go back with it). It also watches what the logs
// yield: the objective ([objective] metric, objective_watch.h) and points at all (log_yield.h),
// and stops the run before submitting more when the first logs show neither.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "logs/metrics_parser.h"
#include "run/log_format_check.h"
#include "run/objective_check.h"
#include "run/run_context.h"
#include "slurm/slurm_client.h"
#include "stopping/early_stop.h"
#include "store/store.h"

namespace sweep::run {

class Ingester {
 public:
  // `stopping`: the stopping rules' series, extended by every stored point of the objective.
  Ingester(RunContext& ctx, stopping::StoppingState& stopping);

  // What one tick's read brought, by trial id.
  struct Reads {
    std::map<int64_t, Result<std::string>> logs;  // the log's bytes from its offset
    // The telemetry file's bytes, with the offset they were read at.
    std::map<int64_t, std::pair<int64_t, Result<std::string>>> telemetry;
    MarksRead marks;              // start marks of trials whose log is read from its start
    std::set<int64_t> rewritten;  // the log is shorter than what was read of it: a new run wrote it
    std::set<int64_t> hold;       // not to be read this tick (another run's log)
  };
  // One ReadMany (over SSH: one command for up to 100 files) for every trial whose job has started:
  // its log from one byte before its offset (to see a rewritten log), then the telemetry files, then
  // the start marks of logs read from their start.
  Reads Read(const std::vector<store::TrialRecord>& trials, const std::map<std::string, slurm::JobInfo>& jobs);
  // A study never reads a log it did not write: trials about to read a log from its start whose
  // start marks say another run wrote it (another study's job on the same path) go to `hold`,
  // with an event (once per trial).
  Status HoldForeignLogs(const std::vector<store::TrialRecord>& trials, Reads& reads);
  // Stores what `reads` brought of `trials` (those not held), in one transaction, and counts the
  // points in `report`. Rolled back, the trials' offsets and parsers are as before.
  Status IngestAll(const std::vector<store::TrialRecord*>& trials, Reads& reads, TickReport& report);

  // Stores the log's new lines; `first`: the first chunk, already read, else read here. With `batch`, the rows
  // are added to it instead, for the caller to store in its transaction (Store::AppendMetricsMany), and the
  // trial's offset and parser move on at once: the caller undoes them if that fails (IngestAll).
  Result<int64_t> Ingest(store::TrialRecord& trial, const Result<std::string>* first = nullptr,
                         std::vector<store::Store::LogAppend>* batch = nullptr);
  // Stores the telemetry file's new samples ([job] monitor = true), as Ingest does the log's.
  Result<int64_t> IngestTelemetry(store::TrialRecord& trial, const Result<std::string>* first = nullptr);
  // Whether the telemetry file starting with `head` was written by the trial's current run (its header).
  static bool TelemetryOfThisRun(const store::TrialRecord& trial, std::string_view head);
  // The last 64 KiB or so of what was read of the trial's log (empty when there is none).
  Result<std::string> LogTail(const store::TrialRecord& trial);

  // Forgets what was parsed of the trial's current log (its run is over, or will be read again).
  void ForgetRead(int64_t trial_id);
  // ForgetRead, and the trial starts over: what its log yielded is forgotten too.
  void Forget(int64_t trial_id);

  // First tick: the logs of trials that stored no point are read again from their start when the
  // study file changed (its metric_format fixed); otherwise the first such log that ended is shown
  // to the yield watch, so a study stopped for it stops again before submitting anything. Once a run.
  Status RereadEmptyLogs(std::vector<store::TrialRecord>& trials, bool study_changed);
  // Before submitting: stops the run when no trial logs the objective; warns once about time.
  Status CheckObjectiveLogged(const std::vector<store::TrialRecord>& trials);
  // Before submitting: stops the run when a trial's log has lines and yields no point.
  // `more_to_propose`: a tpe study that will propose more trials.
  Status CheckLogsYield(const std::vector<store::TrialRecord>& trials, bool more_to_propose);

 private:
  RunContext& ctx_;
  stopping::StoppingState& stopping_;
  std::map<int64_t, logs::ParserState> parsers_;
  std::set<int64_t> foreign_reported_;  // trials whose log another run wrote, already reported
  // The first trials' logs against the objective and the time rules (objective_watch.h).
  ObjectiveCheck watch_;
  bool watch_primed_ = false;  // trials that already stored the objective (a resumed run) counted
  // Logs that have lines must yield points (log_yield.h).
  LogFormatCheck yield_;
  bool reread_checked_ = false;  // RereadEmptyLogs done (once per run)
  bool yield_warned_ = false;    // the verdict logged with nothing left to submit (once)
};

}  // namespace sweep::run
