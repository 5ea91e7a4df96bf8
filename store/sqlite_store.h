// SqliteStore: the Store on SQLite. Its methods are in sqlite_store.cc (studies, trials, events, the lease),
// metric_writes.cc (appending metrics and keeping their summaries) and metric_reads.cc (the shapes of
// metric reads).
// Internal to store/ (scripts/include-loops.py checks that no other folder includes it).
// Module store/: the only one that includes sqlite3.h.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "store/checkpointer.h"
#include "store/sqlite_db.h"
#include "store/store.h"

namespace sweep::store {

class SqliteStore final : public Store {
 public:
  static Result<std::unique_ptr<Store>> Create(const std::string& path, bool read_only);

  Result<int64_t> UpsertStudy(const std::string& name, const std::string& spec_path, const std::string& spec_hash,
                              double now) override;
  Result<StudyRecord> GetStudy(const std::string& name) override;
  Status InsertTrialsIfAbsent(int64_t study_id, std::vector<TrialRecord>& trials) override;
  Result<std::vector<TrialRecord>> ListTrials(int64_t study_id) override;
  Result<TrialRecord> GetTrial(int64_t trial_id) override;
  Status UpdateTrial(const TrialRecord& trial) override;
  Status AppendMetrics(int64_t trial_id, const std::vector<MetricRow>& rows, int64_t new_offset) override;
  Status AppendTelemetry(int64_t trial_id, const std::vector<MetricRow>& rows, int64_t new_offset) override;
  Status AppendMetricsMany(const std::vector<LogAppend>& appends) override;
  Status KeepSummaries(int64_t study_id, const std::vector<int64_t>& trial_ids) override;
  Status ResetMetrics(int64_t trial_id) override;
  // What Append writes for one trial: its rows, and the offset they end at.
  struct AppendRef {
    int64_t trial_id;
    const std::vector<MetricRow>* rows;
    int64_t new_offset;
  };
  // AppendMetrics, AppendTelemetry and AppendMetricsMany: the rows, and the offset `set_offset` moves, of each.
  Status Append(const std::vector<AppendRef>& appends, const StmtPtr& set_offset, const char* source);
  Result<std::vector<MetricRow>> Metrics(int64_t trial_id) override;
  Result<std::vector<MetricColumns>> MetricTable(int64_t trial_id) override;
  Result<TrialSummary> Summary(int64_t trial_id, const std::vector<std::string>& series_of) override;
  Result<std::vector<TrialSummary>> Summaries(int64_t study_id, const std::vector<std::string>& series_of) override;
  Result<std::vector<MetricRow>> MetricSeries(int64_t trial_id, const std::string& name) override;
  Result<std::vector<std::vector<CurvePoint>>> MetricCurves(int64_t trial_id,
                                                            const std::vector<std::string>& names) override;
  Result<std::optional<MetricRow>> LastMetric(int64_t trial_id, const std::string& name) override;
  Result<std::vector<double>> MetricTail(int64_t trial_id, const std::string& name, size_t n) override;
  Result<std::vector<CurvePoint>> MetricRange(int64_t trial_id, const std::string& name, int64_t first_step,
                                              int64_t last_step, size_t before) override;
  Result<int64_t> CountMetrics(int64_t trial_id) override;
  Status AddEvent(int64_t study_id, std::optional<int64_t> trial_id, double at, const std::string& kind,
                  const std::string& message) override;
  Result<std::vector<EventRecord>> Events(int64_t study_id) override;
  Result<std::vector<EventRecord>> EventsAfter(int64_t study_id, const std::string& kind, int64_t after_id) override;
  Result<std::optional<LeaseRecord>> ReadLease() override;
  Status WriteLease(const LeaseRecord& lease) override;
  Result<bool> RenewLease(const std::string& token, double now, int64_t pid) override;
  Status ReleaseLease(const std::string& token) override;
  const std::string& JournalNote() const override { return journal_note_; }
  Status InTransaction(const std::function<Status()>& fn) override;

 private:
  // Held in one place, like flux-core's context struct; finalized by their unique_ptrs.
  struct Statements {
    StmtPtr begin, commit, rollback;
    StmtPtr upsert_study, get_study, study_exists;
    StmtPtr insert_trial, trial_id_by_key, list_trials, get_trial, update_trial, set_log_offset, set_telemetry_offset,
        reset_offsets;
    StmtPtr delete_metrics;
    StmtPtr insert_metric, insert_metric_name, metric_name_id, metric_names, metrics, metric_series, last_metric,
        count_metrics;
    StmtPtr add_event, events, events_after;
    StmtPtr read_lease, write_lease, renew_lease, release_lease;
    StmtPtr metric_tail, metric_range, metric_before, series_by_id, trial_summary, study_summaries, write_summary,
        write_bucket, buckets, study_buckets, delete_buckets_of, delete_summaries, delete_buckets;
    // kRowsPerInsert metric rows, kSummariesPerWrite summary rows in one statement (AppendMetricsMany).
    StmtPtr insert_metrics, write_summaries;
  };
  static constexpr int kRowsPerInsert = 64;      // 5 parameters each
  static constexpr int kSummariesPerWrite = 32;  // 25 each: 800, under the 999 of SQLite before 3.32
  // A trial's summaries as the database has them, by metric number (see summaries_).
  using SummaryCache = std::unordered_map<int64_t, MetricSummary>;

  SqliteStore(std::string path, DbPtr db, bool read_only)
      : path_(std::move(path)), db_(std::move(db)), read_only_(read_only) {}
  Status PrepareStatements();
  Query Use(const StmtPtr& stmt, std::string what) { return Query(db_.get(), path_, stmt.get(), std::move(what)); }
  Status CheckWritable(std::string_view what) const;
  Status RequireStudy(int64_t study_id);
  Status RunTransaction(const std::function<Status()>& fn);
  // The number of a metric name, added to metric_names on first use (inside the caller's transaction).
  Result<int64_t> MetricNameId(const std::string& name);
  // The names of metric numbers, read again when a number is not known yet.
  Result<const std::string*> MetricName(int64_t name_id);
  // The trial's summaries from summaries_, read from the database on first use.
  Result<SummaryCache*> CachedSummaries(int64_t trial_id);
  // Summary() from summaries_ (no series), when the trial is there.
  Result<std::optional<TrialSummary>> SummaryFromCache(int64_t trial_id);
  // Recomputes one metric's summary and buckets from its rows (an out-of-order row).
  Status RebuildSummary(int64_t trial_id, int64_t name_id, MetricSummary& m);
  // Reads the summary rows of `q` (trial's or study's) into `out`; `trial_col`: the trial id's column or -1.
  Status ReadSummaries(Query& q, int trial_col, std::vector<TrialSummary>& out);
  Status FillSeries(TrialSummary& t, const std::vector<std::string>& series_of);
  // The number of metric `name`, if any trial logged it (cached, as MetricNameId does).
  Result<std::optional<int64_t>> ExistingNameId(const std::string& name);
  // The series of `name` of every trial in `all` (a study's, in trial id order), in one statement.
  Status FillStudySeries(int64_t study_id, std::vector<TrialSummary>& all, const std::string& name);

  std::string path_;
  std::string journal_note_;  // JournalNote()
  // Declared before stmts_ so that it is destroyed after them: a connection closes cleanly only
  // once its statements are finalized.
  DbPtr db_;
  bool read_only_;
  Statements stmts_;
  // Depth of InTransaction calls; nested ones join the outermost transaction.
  int txn_depth_ = 0;
  // A failed nested call dooms the outer transaction even if the outer fn swallows the error:
  // otherwise half of the nested work would be committed.
  std::optional<Status> nested_failure_;
  // Metric name -> metric_names.id. Names added by a transaction that then rolls back are dropped
  // with it (RunTransaction clears the map), so a cached number always exists in the database.
  std::unordered_map<std::string, int64_t> name_ids_;
  std::unordered_map<int64_t, std::string> names_by_id_;
  // Summaries of the trials this connection appended to, as the database has them once the current
  // transaction commits: read once per trial, then kept across commits (only this store writes
  // them: `run` holds the study's lock), dropped whole when a transaction rolls back, so nothing
  // a rollback undid outlives it. Reading them again every tick cost a query per trial per tick.
  std::unordered_map<int64_t, SummaryCache> summaries_;
  // The WAL's checkpoints off the commits, once AppendMetricsMany (a run's ticks) writes; declared last, so that
  // it stops before the connection closes.
  std::unique_ptr<Checkpointer> checkpointer_;
};

}  // namespace sweep::store
