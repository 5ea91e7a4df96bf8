// Store: the study database (SQLite, WAL; a rollback journal on a network filesystem). The orchestrator is its only
// writer; `status` and `report` read it while a run is going on.
//
// Design. One file per study directory, schema versioned by PRAGMA user_version with numbered
// migrations (migrations.cc). Tables:
//   studies(id, name UNIQUE, spec_path, spec_hash, created_at)
//   trials(id, study_id, trial_key, params_json, state, reason, job_id, slurm_state, exit_code,
//          attempt, submitted_at, started_at, ended_at, log_path, log_offset, stop_request,
//          array_name, array_index, prior_run_s, job_restarts, telemetry_offset,
//          UNIQUE(study_id, trial_key))
//   metric_names(id, name UNIQUE)
//   metrics(trial_id, name_id, step, time_s, value, PRIMARY KEY(trial_id, step, name_id))
//     WITHOUT ROWID; a log line's values are adjacent, so a tick's rows of one trial are one
//     append at the end of its key range (see migration 3 in migrations.cc)
//   metric_summaries(trial_id, name_id, points, first and last point, range, stride, the open
//     bucket, the last values, ...) and metric_buckets(trial_id, name_id, bucket, ..., the smoothed
//     curve's range smooth_min/smooth_max): what ingestion keeps about
//     each metric (store/metric_summary.h), written in AppendMetrics' transaction; derived, so a
//     migration or an out-of-order row rebuilds them from the metrics
//   events(id, study_id, trial_id, at, kind, message)
//   controller_lease(id = 1, token, host, pid, boot_id, started_at, heartbeat_at): who runs the
//     study (run/lease.h)
// Exactly-once ingestion: metric rows and the log offset they came from are written in one
// transaction (AppendMetrics; the run loop writes a whole tick's rows with AppendMetricsMany in one InTransaction),
// and the metrics key makes a replay of the same bytes harmless. In the sqlite3 shell:
//   SELECT m.step, n.name, m.value FROM metrics m JOIN metric_names n ON n.id = m.name_id;
// States are stored as text (the names in orchestrator's trial state list) so the database
// reads well in the sqlite3 shell.
//
// Thread-safety: none; one Store per thread. sqlite3.h is included only by store/ (sqlite_db.h and the files behind
// SqliteStore). Module store/: the study database; uses base/ and SQLite only.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/metric_point.h"
#include "base/params.h"
#include "base/status.h"
#include "store/metric_summary.h"

namespace sweep::store {

struct TrialRecord {
  int64_t id = 0;
  int64_t study_id = 0;
  std::string trial_key;  // stable id derived from the parameters
  // The trial's values as the study made them (base/params_text.h): {"lr":0.01,"optimizer":"adam"},
  // keys sorted. The store keeps this text; the application reads the values back typed through
  // Values, Cells and HoldsValues, never by parsing it.
  std::string params_json;
  std::string state;        // "new", "dropped", "submitting", "pending", "running", "completed", ...
  std::string reason;       // why dropped / Slurm reason / failure detail
  std::string job_id;       // empty until submitted
  std::string slurm_state;  // raw Slurm state, e.g. "CANCELLED by 0"
  std::string exit_code;    // Slurm's "42:0"
  int attempt = 0;
  std::optional<double> submitted_at, started_at, ended_at;  // Unix seconds
  std::string log_path;                                      // on the cluster side
  int64_t log_offset = 0;                                    // bytes of log_path already ingested
  // Why slurmsweep asked Slurm to stop the job ("cancelled by the user", "pruned: ..."); empty if
  // it did not. Kept apart from `reason` so an end the user caused is told from one they did not.
  std::string stop_request;
  // A trial submitted as a task of a job array: the array's job name (its sbatch --job-name, so
  // an interrupted submission is found again) and the task index. Empty / -1 for a plain job.
  std::string array_name;
  int array_index = -1;
  // Seconds run by earlier attempts of the trial that were retried from scratch (started_at to
  // ended_at of each): part of what the trial cost.
  double prior_run_s = 0;
  // Slurm's restart count of job_id when the current attempt began: a larger count in squeue (or
  // in the job's start marks) means Slurm ran the job again under the same id (requeue).
  int job_restarts = 0;
  // Bytes of the trial's telemetry file (base/telemetry.h) already ingested; only AppendTelemetry
  // moves it, and ResetMetrics sets it to 0 with log_offset.
  int64_t telemetry_offset = 0;

  // A trial as the study expanded it, before it is stored: "new", or "dropped" with the spec's
  // dropped_reason (a constraint, the memory planner).
  static TrialRecord FromSpec(const TrialSpec& spec);

  // The values of `names` in that order, typed as the study file gave them; a name the trial has
  // no value for is left out (a planner's configuration, phase 2's seeds).
  Params Values(const std::vector<std::string>& names) const;
  // The same values as the reports carry them, with the text the store keeps ("1.0" for a float
  // 1); an empty cell for a name the trial has no value for.
  std::vector<ParamCell> Cells(const std::vector<std::string>& names) const;
  // Whether the trial has each value of `wanted`, a parameter text ([report] baseline given as a
  // table of values): equal, or shown as the same text. False when `wanted` is no parameter text.
  bool HoldsValues(const std::string& wanted) const;
};

using MetricRow = MetricPoint;  // base/metric_point.h

// One metric of one trial, column-wise: no name per row, each vector one allocation.
struct MetricColumns {
  std::string name;
  std::vector<int64_t> steps;  // ascending
  std::vector<double> times, values;
};

struct EventRecord {
  int64_t id = 0;
  std::optional<int64_t> trial_id;
  double at = 0;
  std::string kind;
  std::string message;
};

// Who runs the study (run/lease.h): one row at most. `token` tells one run from another
// (a pid repeats across hosts and boots); `heartbeat_at` is the holder's clock when it last renewed.
struct LeaseRecord {
  std::string token;
  std::string host;
  int64_t pid = 0;
  std::string boot_id;
  double started_at = 0;
  double heartbeat_at = 0;
};

struct StudyRecord {
  int64_t id = 0;
  std::string name;
  std::string spec_path;
  std::string spec_hash;
  double created_at = 0;
};

class Store {
 public:
  // Opens or creates the database at `path` (file mode 0600), applying migrations.
  // A database newer than this binary is refused (kFailedPrecondition).
  static Result<std::unique_ptr<Store>> Open(const std::string& path);
  // Opens read-only (for `status`/`report` while a run writes); no migrations.
  static Result<std::unique_ptr<Store>> OpenReadOnly(const std::string& path);
  virtual ~Store() = default;

  // Inserts the study if absent (by name), else updates spec_path/spec_hash. Returns its id.
  virtual Result<int64_t> UpsertStudy(const std::string& name, const std::string& spec_path,
                                      const std::string& spec_hash, double now) = 0;
  virtual Result<StudyRecord> GetStudy(const std::string& name) = 0;

  // Inserts trials whose (study, trial_key) is new; existing ones are left untouched
  // (a rerun never resets state). One transaction. Fills in ids of `trials`.
  virtual Status InsertTrialsIfAbsent(int64_t study_id, std::vector<TrialRecord>& trials) = 0;
  virtual Result<std::vector<TrialRecord>> ListTrials(int64_t study_id) = 0;
  virtual Result<TrialRecord> GetTrial(int64_t trial_id) = 0;

  // Writes every mutable column of `trial` (state, reason, job_id, slurm_state, exit_code,
  // attempt, times, log_path) except log_offset, which only AppendMetrics moves.
  virtual Status UpdateTrial(const TrialRecord& trial) = 0;

  // Atomically: insert `rows` for the trial (rows already present are ignored) and set the
  // trial's log_offset to `new_offset`.
  virtual Status AppendMetrics(int64_t trial_id, const std::vector<MetricRow>& rows, int64_t new_offset) = 0;
  // AppendMetrics for the rows of the trial's telemetry file: moves telemetry_offset instead.
  virtual Status AppendTelemetry(int64_t trial_id, const std::vector<MetricRow>& rows, int64_t new_offset) = 0;
  // One AppendMetrics call's arguments.
  struct LogAppend {
    int64_t trial_id = 0;
    std::vector<MetricRow> rows;
    int64_t new_offset = 0;
  };
  // Atomically: every append, in order, as AppendMetrics makes it (a trial may come more than once: a log read
  // in chunks). A tick's rows of every trial in a few statements, not several per trial (issue 42: 10,000
  // running trials). Default: AppendMetrics each, in one transaction.
  virtual Status AppendMetricsMany(const std::vector<LogAppend>& appends) {
    return InTransaction([&]() -> Status {
      for (const LogAppend& a : appends) {
        Status s = AppendMetrics(a.trial_id, a.rows, a.new_offset);
        if (!s.ok()) return s;
      }
      return Status::OK();
    });
  }
  // A writer about to append to many of the study's trials (a run's first tick) reads every summary of them in
  // one statement, instead of one per trial when each is first appended to or read by Summary() without a
  // series. `trial_ids`: the study's trials to keep (those without metrics are known to have none). Default:
  // nothing kept.
  virtual Status KeepSummaries(int64_t study_id, const std::vector<int64_t>& trial_ids) {
    (void)study_id, (void)trial_ids;
    return Status::OK();
  }
  // Atomically: delete every metric row of the trial and set its log_offset (and
  // telemetry_offset) to 0. For a retry
  // that starts from scratch: the failed attempt's curve would otherwise shadow the new one.
  virtual Status ResetMetrics(int64_t trial_id) = 0;
  // Every row of the trial, ordered by (name, step). A NaN value or time_s is stored (as NULL)
  // and read back as NaN. A string per row: MetricTable reads the same rows column-wise.
  virtual Result<std::vector<MetricRow>> Metrics(int64_t trial_id) = 0;
  // Every row of the trial, one MetricColumns per metric, by name; each column reserved to the
  // metric's size (from its summary) and filled in one pass over the trial's rows.
  virtual Result<std::vector<MetricColumns>> MetricTable(int64_t trial_id) = 0;
  // One metric of one trial in step order: the trial's rows in key order, the other metrics' skipped (no index by
  // metric: it cost a page per metric and trial in every tick, migration 10).
  virtual Result<std::vector<MetricRow>> MetricSeries(int64_t trial_id, const std::string& name) = 0;
  // Several metrics of one trial, each in step order (empty for one it never logged), in one pass over
  // the trial's rows in key order (a restarted run's stopping curves: one pass instead of one per metric).
  // Default: MetricSeries each.
  virtual Result<std::vector<std::vector<CurvePoint>>> MetricCurves(int64_t trial_id,
                                                                    const std::vector<std::string>& names) {
    std::vector<std::vector<CurvePoint>> curves(names.size());
    for (size_t k = 0; k < names.size(); ++k) {
      auto rows = MetricSeries(trial_id, names[k]);
      if (!rows.ok()) return rows.status();
      curves[k].reserve(rows->size());
      for (const auto& m : *rows) curves[k].push_back({m.step, m.time_s, m.value});
    }
    return curves;
  }
  // The values of the last `n` points of one metric (fewer if it has fewer), in step order: the trial's rows read
  // back from its last step until `n` are found, so a final value of a metric logged every line costs `n` lines.
  virtual Result<std::vector<double>> MetricTail(int64_t trial_id, const std::string& name, size_t n) = 0;
  // One metric's points with first_step <= step <= last_step, preceded by up to `before` points
  // before first_step, in step order, from the key's step range: a bucket of the summary's series
  // read back point by point (the smoothed curve's window reaches `before` points back).
  virtual Result<std::vector<CurvePoint>> MetricRange(int64_t trial_id, const std::string& name, int64_t first_step,
                                                      int64_t last_step, size_t before) = 0;
  // The row with the greatest step for `name`, if any (to resume a time axis after a restart),
  // from the metric's summary.
  virtual Result<std::optional<MetricRow>> LastMetric(int64_t trial_id, const std::string& name) = 0;
  // What ingestion kept about each metric of the trial (store/metric_summary.h), kept in the same
  // transaction as the rows: a few rows per metric, however many points it has. The complete
  // buckets of the downsampled series are read for the metrics named in `series_of` only.
  virtual Result<TrialSummary> Summary(int64_t trial_id, const std::vector<std::string>& series_of = {}) = 0;
  // Summary() of every trial of the study that has metrics, in trial id order, with two queries
  // plus one per trial and metric in `series_of`.
  virtual Result<std::vector<TrialSummary>> Summaries(int64_t study_id,
                                                      const std::vector<std::string>& series_of = {}) = 0;
  virtual Result<int64_t> CountMetrics(int64_t trial_id) = 0;

  virtual Status AddEvent(int64_t study_id, std::optional<int64_t> trial_id, double at, const std::string& kind,
                          const std::string& message) = 0;
  virtual Result<std::vector<EventRecord>> Events(int64_t study_id) = 0;
  // The study's events of one kind recorded after event `after_id`, oldest first: what a run asks
  // before it submits (a `cancel` request) without reading every event. This default filters Events.
  virtual Result<std::vector<EventRecord>> EventsAfter(int64_t study_id, const std::string& kind, int64_t after_id) {
    auto all = Events(study_id);
    if (!all.ok()) return all.status();
    std::vector<EventRecord> out;
    for (auto& e : *all) {
      if (e.kind == kind && e.id > after_id) out.push_back(std::move(e));
    }
    return out;
  }

  // The controller's lease, if a run holds (or held) one. Read-only stores read it too (`status`).
  virtual Result<std::optional<LeaseRecord>> ReadLease() = 0;
  // Replaces the lease; call inside InTransaction after ReadLease, so the two are one step.
  virtual Status WriteLease(const LeaseRecord& lease) = 0;
  // Moves the heartbeat (and pid, after a fork) of the lease held by `token`; false if the lease
  // is no longer `token`'s (another run took it over, or it was released).
  virtual Result<bool> RenewLease(const std::string& token, double now, int64_t pid) = 0;
  // Removes the lease if `token` still holds it.
  virtual Status ReleaseLease(const std::string& token) = 0;
  // Non-empty when the database is on a network filesystem and uses a rollback journal instead of
  // WAL: one line to tell the user once.
  virtual const std::string& JournalNote() const = 0;

  // Runs `fn` inside one transaction (BEGIN IMMEDIATE ... COMMIT, ROLLBACK on error).
  // Nested calls join the outer transaction.
  virtual Status InTransaction(const std::function<Status()>& fn) = 0;
};

// The schema version this binary writes (PRAGMA user_version).
int SchemaVersion();

// True for the store's "another process holds the database lock" error (kUnavailable, like an
// unreachable cluster: retry later), so callers can say which of the two it was.
bool IsDatabaseBusy(const Status& s);

}  // namespace sweep::store
