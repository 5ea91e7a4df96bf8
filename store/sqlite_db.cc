// The SQLite plumbing; see sqlite_db.h.
#include "store/sqlite_db.h"

#include <cerrno>
#include <type_traits>
#include <utility>

#include "base/filesystem.h"
#include "store/sql.h"

namespace sweep::store {

// Ends the message of every "database locked" error (its cause, kDatabaseBusy, is what IsDatabaseBusy reads).
constexpr std::string_view kBusyNote = " (another process holds the database lock)";

// Maps a failed SQLite call to a Status naming the file and the operation. BUSY means another
// process held the lock past busy_timeout: kUnavailable tells callers to retry, not to give up.
Status SqliteError(sqlite3* db, const std::string& path, std::string_view what, int rc) {
  std::string msg = path + ": " + std::string(what) + ": " + (db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
  // A lock call the filesystem does not support is no busy database and no disk failure: SQLite
  // reports ENOLCK as BUSY and ENOSYS as an I/O error, and only the errno tells the two apart.
  if (int err = db ? sqlite3_system_errno(db) : 0; ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_IOERR) &&
                                                   (err == ENOLCK || err == ENOSYS || err == EOPNOTSUPP)) {
    return Status::FailedPrecondition(path + ": " + std::string(what) + ": " +
                                      LockFailure("a lock call on the database", err));
  }
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return Status::Unavailable(msg + std::string(kBusyNote)).WithCause(Status::Cause::kDatabaseBusy);
    case SQLITE_CONSTRAINT:
      if (rc == SQLITE_CONSTRAINT_FOREIGNKEY) {
        return Status::NotFound(msg + " (it refers to a study or trial that does not exist)");
      }
      return Status::IOError(msg);
    default:
      return Status::IOError(msg);
  }
}

// Runs SQL that returns no rows we need: pragmas, migrations, transaction control during Open.
Status ExecScript(sqlite3* db, const std::string& path, const char* sql, std::string_view what) {
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db, path, what, rc);
  return Status::OK();
}

// The first column of the first row of a one-off query (used before statements are prepared).
Result<StmtPtr> QueryFirstRow(sqlite3* db, const std::string& path, const char* sql, std::string_view what) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
  StmtPtr stmt(raw);
  if (rc != SQLITE_OK) return SqliteError(db, path, what, rc);
  rc = sqlite3_step(stmt.get());
  if (rc != SQLITE_ROW) {
    if (rc == SQLITE_DONE) return Status::Internal(path + ": " + std::string(what) + ": no result row");
    return SqliteError(db, path, what, rc);
  }
  return stmt;
}

Result<int64_t> QueryInt(sqlite3* db, const std::string& path, const char* sql, std::string_view what) {
  auto stmt = QueryFirstRow(db, path, sql, what);
  if (!stmt.ok()) return stmt.status();
  return static_cast<int64_t>(sqlite3_column_int64(stmt->get(), 0));
}

Result<std::string> QueryText(sqlite3* db, const std::string& path, const char* sql, std::string_view what) {
  auto stmt = QueryFirstRow(db, path, sql, what);
  if (!stmt.ok()) return stmt.status();
  const unsigned char* text = sqlite3_column_text(stmt->get(), 0);
  return std::string(text ? reinterpret_cast<const char*>(text) : "");
}

// Rolls back if a transaction is still open. SQLite rolls back by itself after some errors
// (SQLITE_FULL, SQLITE_IOERR, ...), and a ROLLBACK then would only add a second error.
void RollbackIfOpen(sqlite3* db) {
  if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, kSqlRollback, nullptr, nullptr, nullptr);
}

// Columns in kSqlListTrials / kSqlGetTrial order.
TrialRecord ReadTrial(const Query& q) {
  TrialRecord t;
  t.id = q.Int(0);
  t.study_id = q.Int(1);
  t.trial_key = q.Text(2);
  t.params_json = q.Text(3);
  t.state = q.Text(4);
  t.reason = q.Text(5);
  t.job_id = q.Text(6);
  t.slurm_state = q.Text(7);
  t.exit_code = q.Text(8);
  t.attempt = static_cast<int>(q.Int(9));
  t.submitted_at = q.OptReal(10);
  t.started_at = q.OptReal(11);
  t.ended_at = q.OptReal(12);
  t.log_path = q.Text(13);
  t.log_offset = q.Int(14);
  t.stop_request = q.Text(15);
  t.array_name = q.Text(16);
  t.array_index = static_cast<int>(q.Int(17));
  t.prior_run_s = q.Real(18);
  t.job_restarts = static_cast<int>(q.Int(19));
  t.telemetry_offset = q.Int(20);
  return t;
}

// Columns in kSqlMetricSeries / kSqlLastMetric order.
MetricRow ReadMetric(const Query& q) {
  MetricRow m;
  m.step = q.Int(0);
  m.time_s = q.Real(1);
  m.name = q.Text(2);
  m.value = q.Real(3);
  return m;
}

// Columns of kSqlTrialSummary / kSqlStudySummaries from `col` on (after name_id).
void ReadSummary(const Query& q, int col, MetricSummary& m) {
  m.points = q.Int(col);
  m.finite = q.Int(col + 1);
  m.first_step = q.Int(col + 2);
  m.first_time_s = q.Real(col + 3);
  m.first_value = q.Real(col + 4);
  m.last_step = q.Int(col + 5);
  m.last_time_s = q.Real(col + 6);
  m.last_value = q.Real(col + 7);
  m.max_time_s = q.Real(col + 8);
  m.sum = q.Real(col + 9);
  m.min = q.Real(col + 10);
  m.max = q.Real(col + 11);
  m.stride = q.Int(col + 12);
  m.complete = q.Int(col + 13);
  m.open.first_step = q.Int(col + 14);
  m.open.last_step = q.Int(col + 15);
  m.open.last_time_s = q.Real(col + 16);
  m.open.points = q.Int(col + 17);
  m.open.finite = q.Int(col + 18);
  m.open.sum = q.Real(col + 19);
  m.open.smooth_min = q.Real(col + 20);
  m.open.smooth_max = q.Real(col + 21);
  m.recent = q.Doubles(col + 22);
}

// Binds one summary row's values from parameter `first` on.
void BindSummaryRow(Query& q, int first, int64_t trial_id, int64_t name_id, const MetricSummary& m) {
  q.BindInt(first, trial_id);
  q.BindInt(first + 1, name_id);
  q.BindInt(first + 2, m.points);
  q.BindInt(first + 3, m.finite);
  q.BindInt(first + 4, m.first_step);
  q.BindReal(first + 5, m.first_time_s);
  q.BindReal(first + 6, m.first_value);
  q.BindInt(first + 7, m.last_step);
  q.BindReal(first + 8, m.last_time_s);
  q.BindReal(first + 9, m.last_value);
  q.BindReal(first + 10, m.max_time_s);
  q.BindReal(first + 11, m.sum);
  q.BindReal(first + 12, m.min);
  q.BindReal(first + 13, m.max);
  q.BindInt(first + 14, m.stride);
  q.BindInt(first + 15, m.complete);
  q.BindInt(first + 16, m.open.first_step);
  q.BindInt(first + 17, m.open.last_step);
  q.BindReal(first + 18, m.open.last_time_s);
  q.BindInt(first + 19, m.open.points);
  q.BindInt(first + 20, m.open.finite);
  q.BindReal(first + 21, m.open.sum);
  q.BindReal(first + 22, m.open.smooth_min);
  q.BindReal(first + 23, m.open.smooth_max);
  q.BindDoubles(first + 24, m.recent);
}

// Writes one summary row (kSqlWriteSummary).
Status WriteSummaryRow(Query& q, int64_t trial_id, int64_t name_id, const MetricSummary& m) {
  BindSummaryRow(q, 1, trial_id, name_id, m);
  Status s = q.Run();
  q.Rewind();
  return s;
}

// Writes bucket `index` of a metric (kSqlWriteBucket).
Status WriteBucketRow(Query& q, int64_t trial_id, int64_t name_id, int64_t index, const SeriesBucket& b) {
  q.BindInt(1, trial_id);
  q.BindInt(2, name_id);
  q.BindInt(3, index);
  q.BindInt(4, b.first_step);
  q.BindInt(5, b.last_step);
  q.BindReal(6, b.last_time_s);
  q.BindInt(7, b.points);
  q.BindInt(8, b.finite);
  q.BindReal(9, b.sum);
  q.BindReal(10, b.smooth_min);
  q.BindReal(11, b.smooth_max);
  Status s = q.Run();
  q.Rewind();
  return s;
}

// Reads the complete buckets of a metric (kSqlBuckets).
Status ReadBuckets(Query& q, int64_t trial_id, int64_t name_id, std::vector<SeriesBucket>& out) {
  q.BindInt(1, trial_id);
  q.BindInt(2, name_id);
  SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] {
    SeriesBucket b;
    b.first_step = q.Int(0);
    b.last_step = q.Int(1);
    b.last_time_s = q.Real(2);
    b.points = q.Int(3);
    b.finite = q.Int(4);
    b.sum = q.Real(5);
    b.smooth_min = q.Real(6);
    b.smooth_max = q.Real(7);
    out.push_back(b);
  }));
  q.Rewind();
  return Status::OK();
}

// An ad-hoc statement for the migration, which runs before the store's are prepared.
Result<StmtPtr> Prepare(sqlite3* db, const std::string& path, const char* sql) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db, sql, -1, &raw, nullptr);
  StmtPtr stmt(raw);
  if (rc != SQLITE_OK) return SqliteError(db, path, std::string("prepare \"") + sql + "\"", rc);
  return stmt;
}

}  // namespace sweep::store
