// SqliteStore: the Store on SQLite, and the only file that includes sqlite3.h. All SQL is a
// named constant below, prepared once per connection (flux-core's content-sqlite does the same);
// schema changes are numbered migrations tracked in PRAGMA user_version.
// It stays one file, past the ~700 lines other files keep to, on purpose: every statement, the schema
// and each migration are read side by side when one of them changes, as flux-core keeps its SQL whole.
#include "store/store.h"
#include "base/filesystem.h"
#include "store/metric_summary.h"

#include "base/private_file.h"

#include <fcntl.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <iterator>
#include <limits>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>

namespace sweep::store {
namespace {

// ---- Schema ----------------------------------------------------------------------------------

// kMigrations[i] takes a database from user_version i to i + 1. Never edit a migration that has
// shipped: databases in the field already ran its old text. Append a new one instead.
constexpr const char* kMigrations[] = {
    // 1: the initial schema (see the essay in store.h).
    R"sql(
CREATE TABLE studies (
  id         INTEGER PRIMARY KEY,
  name       TEXT NOT NULL UNIQUE,
  spec_path  TEXT NOT NULL,
  spec_hash  TEXT NOT NULL,
  created_at REAL NOT NULL
);
CREATE TABLE trials (
  id           INTEGER PRIMARY KEY,
  study_id     INTEGER NOT NULL REFERENCES studies(id),
  trial_key    TEXT NOT NULL,
  params_json  TEXT NOT NULL,
  state        TEXT NOT NULL,
  reason       TEXT NOT NULL DEFAULT '',
  job_id       TEXT NOT NULL DEFAULT '',
  slurm_state  TEXT NOT NULL DEFAULT '',
  exit_code    TEXT NOT NULL DEFAULT '',
  attempt      INTEGER NOT NULL DEFAULT 0,
  submitted_at REAL,
  started_at   REAL,
  ended_at     REAL,
  log_path     TEXT NOT NULL DEFAULT '',
  log_offset   INTEGER NOT NULL DEFAULT 0,
  stop_request TEXT NOT NULL DEFAULT '',
  UNIQUE (study_id, trial_key)
);
-- time_s and value are nullable because SQLite stores NaN as NULL, and a diverged run logs
-- "lm_loss nan": NOT NULL would make that row fail ingestion forever. NULL reads back as NaN.
CREATE TABLE metrics (
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  step     INTEGER NOT NULL,
  time_s   REAL,
  name     TEXT NOT NULL,
  value    REAL,
  PRIMARY KEY (trial_id, name, step)
) WITHOUT ROWID;
CREATE TABLE events (
  id       INTEGER PRIMARY KEY,
  study_id INTEGER NOT NULL REFERENCES studies(id),
  trial_id INTEGER REFERENCES trials(id),
  at       REAL NOT NULL,
  kind     TEXT NOT NULL,
  message  TEXT NOT NULL
);
CREATE INDEX events_by_study ON events (study_id, id);
)sql",
    // 2: trials submitted as tasks of a job array: the array's job name and this trial's index.
    R"sql(
ALTER TABLE trials ADD COLUMN array_name TEXT NOT NULL DEFAULT '';
ALTER TABLE trials ADD COLUMN array_index INTEGER NOT NULL DEFAULT -1;
)sql",
    // 3: metric names stored once, and metrics keyed by (trial, step, name). A row was mostly its
    // name ("throughput_tflops" is longer than the rest of it): numbered, the table shrinks by a
    // third. Step before name: a log line's values are adjacent, so a tick's rows of one trial
    // append to one place at the end of its key range instead of one place per metric, and a
    // commit writes a few pages per trial instead of one per metric series. Bulk ingestion of
    // 100 trials (bench/ingest_bench.cc) went from 222k to 625k rows/s for raw inserts; reading
    // one series scans the trial's rows in step order, which the rules and reports do rarely.
    R"sql(
CREATE TABLE metric_names (
  id   INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);
CREATE TABLE metrics_v3 (
  trial_id INTEGER NOT NULL REFERENCES trials(id),
  name_id  INTEGER NOT NULL REFERENCES metric_names(id),
  step     INTEGER NOT NULL,
  time_s   REAL,
  value    REAL,
  PRIMARY KEY (trial_id, step, name_id)
) WITHOUT ROWID;
INSERT INTO metric_names (name) SELECT DISTINCT name FROM metrics ORDER BY name;
INSERT INTO metrics_v3 (trial_id, name_id, step, time_s, value)
  SELECT m.trial_id, n.id, m.step, m.time_s, m.value FROM metrics m JOIN metric_names n ON n.name = m.name;
DROP TABLE metrics;
ALTER TABLE metrics_v3 RENAME TO metrics;
)sql",
    // 4: run time of a trial's earlier attempts (retried from scratch), so that cost counts them.
    R"sql(
ALTER TABLE trials ADD COLUMN prior_run_s REAL NOT NULL DEFAULT 0;
)sql",
    // 5: Slurm's restart count of the job at which the trial's current attempt began (a job that
    // Slurm requeues runs again under the same id; each run is an attempt of its own).
    R"sql(
ALTER TABLE trials ADD COLUMN job_restarts INTEGER NOT NULL DEFAULT 0;
)sql",
    // 6: what ingestion keeps about each metric of each trial (store/metric_summary.h), so that
    // `status`, the reports and a restarted run read a few rows per trial instead of every point:
    // the summary row (counts, first and last point, range, the bucket being filled) and the
    // complete buckets of the downsampled series. Derived data: rebuilt from the metrics by this
    // migration (RebuildSummaries) and whenever a row arrives out of step order. And an index by
    // metric, so that reading one metric of a trial (a restarted run's curves) reads that metric's
    // rows only, not every row of the trial. REAL columns are nullable: SQLite stores NaN as NULL.
    R"sql(
CREATE TABLE metric_summaries (
  trial_id         INTEGER NOT NULL,
  name_id          INTEGER NOT NULL,
  points           INTEGER NOT NULL,
  finite           INTEGER NOT NULL,
  first_step       INTEGER NOT NULL,
  first_time_s     REAL,
  first_value      REAL,
  last_step        INTEGER NOT NULL,
  last_time_s      REAL,
  last_value       REAL,
  max_time_s       REAL,
  sum              REAL,
  min              REAL,
  max              REAL,
  stride           INTEGER NOT NULL,
  complete         INTEGER NOT NULL,
  open_first_step  INTEGER NOT NULL,
  open_last_step   INTEGER NOT NULL,
  open_last_time_s REAL,
  open_points      INTEGER NOT NULL,
  open_finite      INTEGER NOT NULL,
  open_sum         REAL,
  PRIMARY KEY (trial_id, name_id)
) WITHOUT ROWID;
CREATE TABLE metric_buckets (
  trial_id    INTEGER NOT NULL,
  name_id     INTEGER NOT NULL,
  bucket      INTEGER NOT NULL,
  first_step  INTEGER NOT NULL,
  last_step   INTEGER NOT NULL,
  last_time_s REAL,
  points      INTEGER NOT NULL,
  finite      INTEGER NOT NULL,
  sum         REAL,
  PRIMARY KEY (trial_id, name_id, bucket)
) WITHOUT ROWID;
CREATE INDEX metrics_by_name ON metrics (trial_id, name_id, step);
)sql",
    // 7: each bucket's range of the smoothed curve (the trailing mean of kFinalWindow points,
    // base/final_objective.h), so that a report finds where a trial reaches its target by
    // reading one bucket's points, and the last kFinalWindow - 1 values of each metric (doubles,
    // little-endian), the window the next point's smoothed value needs. Summaries are rebuilt.
    R"sql(
ALTER TABLE metric_summaries ADD COLUMN open_smooth_min REAL;
ALTER TABLE metric_summaries ADD COLUMN open_smooth_max REAL;
ALTER TABLE metric_summaries ADD COLUMN recent BLOB;
ALTER TABLE metric_buckets ADD COLUMN smooth_min REAL;
ALTER TABLE metric_buckets ADD COLUMN smooth_max REAL;
DELETE FROM metric_buckets;
DELETE FROM metric_summaries;
)sql",
    // 8: bytes of the trial's telemetry file (LOG.telemetry, [job] monitor = true) already
    // ingested, moved with its rows as log_offset is with the log's.
    R"sql(
ALTER TABLE trials ADD COLUMN telemetry_offset INTEGER NOT NULL DEFAULT 0;
)sql",
    // 9: the controller's lease (run/lease.h): who runs the study, from which host and
    // boot, and when it last said so. One row at most, in the database itself, so that every host
    // that opens the study sees it.
    R"sql(
CREATE TABLE controller_lease (
  id           INTEGER PRIMARY KEY CHECK (id = 1),
  token        TEXT NOT NULL,
  host         TEXT NOT NULL,
  pid          INTEGER NOT NULL,
  boot_id      TEXT NOT NULL,
  started_at   REAL NOT NULL,
  heartbeat_at REAL NOT NULL
);
)sql",
};

// The last schema version that changed what the summaries hold: a migration from before it
// (re)builds them from the metrics.
constexpr int64_t kSummariesVersion = 7;

// ---- Connection setup --------------------------------------------------------------------------

// busy_timeout comes first so that the statements after it wait for a lock instead of failing.
// Ingestion commits one small transaction per trial per tick, each touching a page per metric
// series: with SQLite's defaults (checkpoint every 1000 WAL pages, 2 MB cache) it spent most of
// its time flushing checkpoints and re-reading pages (bench/ingest_bench.cc). A checkpoint every
// 10000 pages (~40 MB of WAL) and a 32 MB cache cut that, at a bounded cost in memory and disk.
constexpr const char* kSqlConnectionPragmas =
    "PRAGMA busy_timeout = 5000; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; "
    "PRAGMA wal_autocheckpoint = 10000; PRAGMA cache_size = -32768;";
constexpr const char* kSqlEnableWal = "PRAGMA journal_mode = WAL";
// On a network filesystem: SQLite's WAL keeps its index in shared memory (-shm), which only
// processes of one host share; the rollback journal needs nothing but the file's locks. TRUNCATE,
// not DELETE: each commit then empties the journal instead of unlinking and creating it again, two
// round trips to the file server fewer (ingest_bench on sshfs).
constexpr const char* kSqlEnableRollbackJournal = "PRAGMA journal_mode = TRUNCATE";
constexpr const char* kSqlReadUserVersion = "PRAGMA user_version";
constexpr const char* kSqlSetUserVersionPrefix = "PRAGMA user_version = ";  // + the number
constexpr const char* kSqlCountSchemaObjects = "SELECT count(*) FROM sqlite_master";

// ---- Statements, prepared once per connection ------------------------------------------------

// IMMEDIATE takes the write lock up front: a deferred transaction that upgrades from read to
// write can get SQLITE_BUSY without the busy handler ever being consulted.
constexpr const char* kSqlBegin = "BEGIN IMMEDIATE";
constexpr const char* kSqlCommit = "COMMIT";
constexpr const char* kSqlRollback = "ROLLBACK";

constexpr const char* kSqlUpsertStudy =
    "INSERT INTO studies (name, spec_path, spec_hash, created_at) VALUES (?1, ?2, ?3, ?4) "
    "ON CONFLICT (name) DO UPDATE SET spec_path = excluded.spec_path, spec_hash = excluded.spec_hash";
constexpr const char* kSqlGetStudy = "SELECT id, name, spec_path, spec_hash, created_at FROM studies WHERE name = ?1";
constexpr const char* kSqlStudyExists = "SELECT 1 FROM studies WHERE id = ?1";

// DO NOTHING on the key only (not INSERT OR IGNORE, which would also swallow NOT NULL and
// CHECK failures): an existing trial keeps its state, so a rerun never resets it.
constexpr const char* kSqlInsertTrial =
    "INSERT INTO trials (study_id, trial_key, params_json, state, reason, job_id, slurm_state, "
    "exit_code, attempt, submitted_at, started_at, ended_at, log_path, log_offset) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) "
    "ON CONFLICT (study_id, trial_key) DO NOTHING";
constexpr const char* kSqlTrialIdByKey = "SELECT id FROM trials WHERE study_id = ?1 AND trial_key = ?2";
// A trial's columns in the order ReadTrial expects, written once for every query that reads a
// trial (a macro only so that the literals concatenate).
#define SWEEP_TRIAL_COLUMNS                                                                                    \
  "id, study_id, trial_key, params_json, state, reason, job_id, slurm_state, exit_code, "                      \
  "attempt, submitted_at, started_at, ended_at, log_path, log_offset, stop_request, array_name, array_index, " \
  "prior_run_s, job_restarts, telemetry_offset"
constexpr const char* kSqlListTrials = "SELECT " SWEEP_TRIAL_COLUMNS " FROM trials WHERE study_id = ?1 ORDER BY id";
constexpr const char* kSqlGetTrial = "SELECT " SWEEP_TRIAL_COLUMNS " FROM trials WHERE id = ?1";
#undef SWEEP_TRIAL_COLUMNS
// log_offset is absent on purpose: only AppendMetrics moves it, together with the rows.
constexpr const char* kSqlUpdateTrial =
    "UPDATE trials SET state = ?2, reason = ?3, job_id = ?4, slurm_state = ?5, exit_code = ?6, "
    "attempt = ?7, submitted_at = ?8, started_at = ?9, ended_at = ?10, log_path = ?11, stop_request = ?12, "
    "array_name = ?13, array_index = ?14, prior_run_s = ?15, job_restarts = ?16 WHERE id = ?1";
constexpr const char* kSqlSetLogOffset = "UPDATE trials SET log_offset = ?2 WHERE id = ?1";
constexpr const char* kSqlSetTelemetryOffset = "UPDATE trials SET telemetry_offset = ?2 WHERE id = ?1";
constexpr const char* kSqlResetOffsets = "UPDATE trials SET log_offset = 0, telemetry_offset = 0 WHERE id = ?1";
constexpr const char* kSqlDeleteMetrics = "DELETE FROM metrics WHERE trial_id = ?1";

// A replayed row hits the primary key and is dropped; that is what makes ingestion exactly-once.
constexpr const char* kSqlInsertMetric =
    "INSERT INTO metrics (trial_id, name_id, step, time_s, value) VALUES (?1, ?2, ?3, ?4, ?5) "
    "ON CONFLICT (trial_id, step, name_id) DO NOTHING";
constexpr const char* kSqlInsertMetricName =
    "INSERT INTO metric_names (name) VALUES (?1) ON CONFLICT (name) DO NOTHING";
constexpr const char* kSqlMetricNameId = "SELECT id FROM metric_names WHERE name = ?1";
// In key order (step, then metric number): no sort and no join in SQL; Metrics() groups the rows
// by name itself, which took the HTML report of 200 trials x 10k points from 4.6 s back to ~2.6 s.
constexpr const char* kSqlMetrics = "SELECT name_id, step, time_s, value FROM metrics WHERE trial_id = ?1";
constexpr const char* kSqlMetricNames = "SELECT id, name FROM metric_names";
// A range of the primary key: one metric of one trial, already in step order.
constexpr const char* kSqlMetricSeries =
    "SELECT step, time_s, ?2, value FROM metrics "
    "WHERE trial_id = ?1 AND name_id = (SELECT id FROM metric_names WHERE name = ?2) ORDER BY step";
constexpr const char* kSqlMetricTail =
    "SELECT value FROM metrics WHERE trial_id = ?1 AND name_id = (SELECT id FROM metric_names WHERE name = ?2) "
    "ORDER BY step DESC LIMIT ?3";
// Through metrics_by_name: the points of one metric in a step range, and the few before it.
constexpr const char* kSqlMetricRange =
    "SELECT step, time_s, value FROM metrics WHERE trial_id = ?1 AND name_id = (SELECT id FROM metric_names WHERE "
    "name = ?2) AND step BETWEEN ?3 AND ?4 ORDER BY step";
constexpr const char* kSqlMetricBefore =
    "SELECT step, time_s, value FROM metrics WHERE trial_id = ?1 AND name_id = (SELECT id FROM metric_names WHERE "
    "name = ?2) AND step < ?3 ORDER BY step DESC LIMIT ?4";
// From the summary: its last point is the one with the greatest step.
constexpr const char* kSqlLastMetric =
    "SELECT last_step, last_time_s, ?2, last_value FROM metric_summaries "
    "WHERE trial_id = ?1 AND name_id = (SELECT id FROM metric_names WHERE name = ?2)";
constexpr const char* kSqlCountMetrics = "SELECT count(*) FROM metrics WHERE trial_id = ?1";
// Through metrics_by_name: one metric's rows only.
constexpr const char* kSqlSeriesById =
    "SELECT step, time_s, value FROM metrics WHERE trial_id = ?1 AND name_id = ?2 ORDER BY step";
// Every row, by trial and metric: the migration that builds the summaries reads each series once.
constexpr const char* kSqlAllSeries =
    "SELECT trial_id, name_id, step, time_s, value FROM metrics ORDER BY trial_id, name_id, step";

// A summary row's columns after (trial_id, name_id), in the order ReadSummary and BindSummary use.
#define SWEEP_SUMMARY_COLUMNS                                                                               \
  "points, finite, first_step, first_time_s, first_value, last_step, last_time_s, last_value, max_time_s, " \
  "sum, min, max, stride, complete, open_first_step, open_last_step, open_last_time_s, open_points, "       \
  "open_finite, open_sum, open_smooth_min, open_smooth_max, recent"
constexpr const char* kSqlTrialSummary =
    "SELECT name_id, " SWEEP_SUMMARY_COLUMNS " FROM metric_summaries WHERE trial_id = ?1";
constexpr const char* kSqlStudySummaries =
    "SELECT s.trial_id, s.name_id, " SWEEP_SUMMARY_COLUMNS
    " FROM trials t JOIN metric_summaries s ON s.trial_id = t.id WHERE t.study_id = ?1 ORDER BY s.trial_id";
constexpr const char* kSqlWriteSummary =
    "REPLACE INTO metric_summaries (trial_id, name_id, " SWEEP_SUMMARY_COLUMNS
    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, "
    "?22, ?23, ?24, ?25)";
#undef SWEEP_SUMMARY_COLUMNS
constexpr const char* kSqlWriteBucket =
    "REPLACE INTO metric_buckets (trial_id, name_id, bucket, first_step, last_step, last_time_s, points, finite, sum, "
    "smooth_min, smooth_max) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
constexpr const char* kSqlBuckets =
    "SELECT first_step, last_step, last_time_s, points, finite, sum, smooth_min, smooth_max FROM metric_buckets "
    "WHERE trial_id = ?1 AND name_id = ?2 ORDER BY bucket";
constexpr const char* kSqlDeleteBucketsOf = "DELETE FROM metric_buckets WHERE trial_id = ?1 AND name_id = ?2";
constexpr const char* kSqlDeleteSummaries = "DELETE FROM metric_summaries WHERE trial_id = ?1";
constexpr const char* kSqlDeleteBuckets = "DELETE FROM metric_buckets WHERE trial_id = ?1";

constexpr const char* kSqlAddEvent =
    "INSERT INTO events (study_id, trial_id, at, kind, message) VALUES (?1, ?2, ?3, ?4, ?5)";
constexpr const char* kSqlEvents = "SELECT id, trial_id, at, kind, message FROM events WHERE study_id = ?1 ORDER BY id";

constexpr const char* kSqlReadLease =
    "SELECT token, host, pid, boot_id, started_at, heartbeat_at FROM controller_lease WHERE id = 1";
constexpr const char* kSqlWriteLease =
    "REPLACE INTO controller_lease (id, token, host, pid, boot_id, started_at, heartbeat_at) "
    "VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6)";
// Moves only our own lease: a controller that took over has another token, and this one learns it
// from the count of changed rows.
constexpr const char* kSqlRenewLease = "UPDATE controller_lease SET heartbeat_at = ?2, pid = ?3 WHERE token = ?1";
constexpr const char* kSqlReleaseLease = "DELETE FROM controller_lease WHERE token = ?1";

// ---- SQLite plumbing ---------------------------------------------------------------------------

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;

struct StmtFinalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

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

Status TooNew(const std::string& path, int64_t version) {
  return Status::FailedPrecondition(path + ": database schema version " + std::to_string(version) +
                                    " is newer than this slurmsweep supports (" + std::to_string(SchemaVersion()) +
                                    "); use a newer slurmsweep");
}

Status NotOurs(const std::string& path) {
  return Status::FailedPrecondition(path + ": not a slurmsweep database (schema version 0)");
}

Status RebuildSummaries(sqlite3* db, const std::string& path);

// Applies the migrations the database lacks, in one transaction with the version bump, so a crash
// leaves either the old schema or the new one.
Status Migrate(sqlite3* db, const std::string& path) {
  SWEEP_RETURN_IF_ERROR(ExecScript(db, path, kSqlBegin, "begin migration"));
  auto apply = [&]() -> Status {
    // Read again under the write lock: another process may have migrated since we looked.
    auto version = QueryInt(db, path, kSqlReadUserVersion, "read schema version");
    if (!version.ok()) return version.status();
    if (*version > SchemaVersion()) return TooNew(path, *version);
    for (int64_t v = *version; v < SchemaVersion(); ++v) {
      SWEEP_RETURN_IF_ERROR(ExecScript(db, path, kMigrations[v], "migrate to schema version " + std::to_string(v + 1)));
    }
    if (*version < kSummariesVersion) SWEEP_RETURN_IF_ERROR(RebuildSummaries(db, path));
    // PRAGMA arguments cannot be bound; the number is ours, not user input.
    std::string bump = kSqlSetUserVersionPrefix + std::to_string(SchemaVersion());
    SWEEP_RETURN_IF_ERROR(ExecScript(db, path, bump.c_str(), "set schema version"));
    return ExecScript(db, path, kSqlCommit, "commit migration");
  };
  Status s = apply();
  if (!s.ok()) RollbackIfOpen(db);
  return s;
}

// One use of a prepared statement. Binds, steps and reads columns; on destruction resets the
// statement and clears its bindings, so it holds no read snapshot (which would stall WAL
// checkpoints) and no stale parameter can leak into the next use.
class Query {
 public:
  Query(sqlite3* db, const std::string& path, sqlite3_stmt* stmt, std::string what)
      : db_(db), path_(path), stmt_(stmt), what_(std::move(what)) {}
  ~Query() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  void BindInt(int index, int64_t value) { Check(sqlite3_bind_int64(stmt_, index, value)); }
  void BindReal(int index, double value) { Check(sqlite3_bind_double(stmt_, index, value)); }
  void BindOptReal(int index, const std::optional<double>& value) {
    Check(value ? sqlite3_bind_double(stmt_, index, *value) : sqlite3_bind_null(stmt_, index));
  }
  void BindOptInt(int index, const std::optional<int64_t>& value) {
    Check(value ? sqlite3_bind_int64(stmt_, index, *value) : sqlite3_bind_null(stmt_, index));
  }
  void BindText(int index, std::string_view value) {
    // A null data pointer would bind SQL NULL, not the empty string.
    Check(sqlite3_bind_text64(stmt_, index, value.data() ? value.data() : "", value.size(), SQLITE_TRANSIENT,
                              SQLITE_UTF8));
  }

  // Doubles as a BLOB of 8-byte little-endian IEEE values, whatever the machine's byte order.
  void BindDoubles(int index, const std::vector<double>& values) {
    std::string bytes(values.size() * 8, '\0');
    for (size_t i = 0; i < values.size(); ++i) {
      uint64_t bits;
      std::memcpy(&bits, &values[i], 8);
      for (int b = 0; b < 8; ++b) bytes[i * 8 + b] = static_cast<char>((bits >> (8 * b)) & 0xff);
    }
    Check(sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT));
  }

  // True when a row is ready to read, false when the statement is done.
  Result<bool> Step() {
    if (bind_rc_ != SQLITE_OK) return SqliteError(db_, path_, what_, bind_rc_);
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return SqliteError(db_, path_, what_, rc);
  }
  // Calls `row()` for each row the statement yields (read them with Int, Real, Text, ...); an
  // error of the statement, or a Status that is not OK from `row()`, ends it.
  template <typename F>
  Status ForEachRow(F&& row) {
    for (;;) {
      auto ready = Step();
      if (!ready.ok()) return ready.status();
      if (!*ready) return Status::OK();
      if constexpr (std::is_same_v<std::invoke_result_t<F&>, Status>) {
        SWEEP_RETURN_IF_ERROR(row());
      } else {
        static_assert(std::is_void_v<std::invoke_result_t<F&>>, "a row callback returns void or Status");
        row();
      }
    }
  }
  // Ready for the next row of a statement run once per row (bulk inserts): every parameter is
  // bound again, so the bindings are not cleared, and `what` is not built again.
  void Rewind() { sqlite3_reset(stmt_); }
  // For statements whose rows (if any) do not matter.
  Status Run() {
    for (;;) {
      auto row = Step();
      if (!row.ok()) return row.status();
      if (!*row) return Status::OK();
    }
  }

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  // NULL is how SQLite stores NaN.
  double Real(int col) const {
    if (IsNull(col)) return std::numeric_limits<double>::quiet_NaN();
    return sqlite3_column_double(stmt_, col);
  }
  std::optional<double> OptReal(int col) const {
    if (IsNull(col)) return std::nullopt;
    return sqlite3_column_double(stmt_, col);
  }
  std::optional<int64_t> OptInt(int col) const {
    if (IsNull(col)) return std::nullopt;
    return sqlite3_column_int64(stmt_, col);
  }
  // A BindDoubles BLOB (NULL: none).
  std::vector<double> Doubles(int col) const {
    const auto* bytes = static_cast<const unsigned char*>(sqlite3_column_blob(stmt_, col));
    size_t n = static_cast<size_t>(sqlite3_column_bytes(stmt_, col)) / 8;
    std::vector<double> values(bytes ? n : 0);
    for (size_t i = 0; i < values.size(); ++i) {
      uint64_t bits = 0;
      for (int b = 0; b < 8; ++b) bits |= static_cast<uint64_t>(bytes[i * 8 + b]) << (8 * b);
      std::memcpy(&values[i], &bits, 8);
    }
    return values;
  }
  std::string Text(int col) const {
    const unsigned char* text = sqlite3_column_text(stmt_, col);
    if (!text) return std::string();
    return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
  }

 private:
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  // Bind failures are reported by the following Step, which keeps call sites linear.
  void Check(int rc) {
    if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  }

  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* stmt_;
  std::string what_;
  int bind_rc_ = SQLITE_OK;
};

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

// Writes one summary row (kSqlWriteSummary).
Status WriteSummaryRow(Query& q, int64_t trial_id, int64_t name_id, const MetricSummary& m) {
  q.BindInt(1, trial_id);
  q.BindInt(2, name_id);
  q.BindInt(3, m.points);
  q.BindInt(4, m.finite);
  q.BindInt(5, m.first_step);
  q.BindReal(6, m.first_time_s);
  q.BindReal(7, m.first_value);
  q.BindInt(8, m.last_step);
  q.BindReal(9, m.last_time_s);
  q.BindReal(10, m.last_value);
  q.BindReal(11, m.max_time_s);
  q.BindReal(12, m.sum);
  q.BindReal(13, m.min);
  q.BindReal(14, m.max);
  q.BindInt(15, m.stride);
  q.BindInt(16, m.complete);
  q.BindInt(17, m.open.first_step);
  q.BindInt(18, m.open.last_step);
  q.BindReal(19, m.open.last_time_s);
  q.BindInt(20, m.open.points);
  q.BindInt(21, m.open.finite);
  q.BindReal(22, m.open.sum);
  q.BindReal(23, m.open.smooth_min);
  q.BindReal(24, m.open.smooth_max);
  q.BindDoubles(25, m.recent);
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

// Migration 6's C++ half, inside its transaction: every series read once, in step order through
// metrics_by_name, and its summary and buckets written as ingestion would have.
Status RebuildSummaries(sqlite3* db, const std::string& path) {
  auto all = Prepare(db, path, kSqlAllSeries);
  if (!all.ok()) return all.status();
  auto summary = Prepare(db, path, kSqlWriteSummary);
  if (!summary.ok()) return summary.status();
  auto bucket = Prepare(db, path, kSqlWriteBucket);
  if (!bucket.ok()) return bucket.status();
  std::string what = "build metric summaries (migration " + std::to_string(kSummariesVersion) + ")";
  Query write_summary(db, path, summary->get(), what);
  Query write_bucket(db, path, bucket->get(), what);
  int64_t trial = -1, name = -1;
  std::vector<CurvePoint> points;
  auto flush = [&]() -> Status {
    if (points.empty()) return Status::OK();
    MetricSummary m = SummarizeSeries("", points);
    SWEEP_RETURN_IF_ERROR(WriteSummaryRow(write_summary, trial, name, m));
    for (size_t i = 0; i < m.buckets.size(); ++i) {
      SWEEP_RETURN_IF_ERROR(WriteBucketRow(write_bucket, trial, name, static_cast<int64_t>(i), m.buckets[i]));
    }
    points.clear();
    return Status::OK();
  };
  Query q(db, path, all->get(), what);
  SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] {
    if (q.Int(0) != trial || q.Int(1) != name) {
      SWEEP_RETURN_IF_ERROR(flush());
      trial = q.Int(0);
      name = q.Int(1);
    }
    points.push_back({q.Int(2), q.Real(3), q.Real(4)});
    return Status::OK();
  }));
  return flush();
}

// ---- The store -----------------------------------------------------------------------------

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
  Status ResetMetrics(int64_t trial_id) override;
  // AppendMetrics and AppendTelemetry: the rows, and the offset `set_offset` moves.
  Status Append(int64_t trial_id, const std::vector<MetricRow>& rows, int64_t new_offset, const StmtPtr& set_offset,
                const char* source);
  Result<std::vector<MetricRow>> Metrics(int64_t trial_id) override;
  Result<std::vector<MetricColumns>> MetricTable(int64_t trial_id) override;
  Result<TrialSummary> Summary(int64_t trial_id, const std::vector<std::string>& series_of) override;
  Result<std::vector<TrialSummary>> Summaries(int64_t study_id, const std::vector<std::string>& series_of) override;
  Result<std::vector<MetricRow>> MetricSeries(int64_t trial_id, const std::string& name) override;
  Result<std::optional<MetricRow>> LastMetric(int64_t trial_id, const std::string& name) override;
  Result<std::vector<double>> MetricTail(int64_t trial_id, const std::string& name, size_t n) override;
  Result<std::vector<CurvePoint>> MetricRange(int64_t trial_id, const std::string& name, int64_t first_step,
                                              int64_t last_step, size_t before) override;
  Result<int64_t> CountMetrics(int64_t trial_id) override;
  Status AddEvent(int64_t study_id, std::optional<int64_t> trial_id, double at, const std::string& kind,
                  const std::string& message) override;
  Result<std::vector<EventRecord>> Events(int64_t study_id) override;
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
    StmtPtr add_event, events;
    StmtPtr read_lease, write_lease, renew_lease, release_lease;
    StmtPtr metric_tail, metric_range, metric_before, series_by_id, trial_summary, study_summaries, write_summary,
        write_bucket, buckets, delete_buckets_of, delete_summaries, delete_buckets;
  };
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
  // Recomputes one metric's summary and buckets from its rows (an out-of-order row).
  Status RebuildSummary(int64_t trial_id, int64_t name_id, MetricSummary& m);
  // Reads the summary rows of `q` (trial's or study's) into `out`; `trial_col`: the trial id's column or -1.
  Status ReadSummaries(Query& q, int trial_col, std::vector<TrialSummary>& out);
  Status FillSeries(TrialSummary& t, const std::vector<std::string>& series_of);

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
};

// Whether the filesystem gives the byte-range locks SQLite takes, asked before SQLite is: it reports
// a missing lock manager (NFS without lockd: ENOLCK) as a busy database, and nobody holds it.
// F_GETLK takes no lock, so a run holding the database is not disturbed.
Status ProbeLocks(const std::string& path, bool read_only) {
  int fd = ::open(path.c_str(), (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (fd < 0) return Status::OK();  // the open that follows names the error
  struct flock probe = {};
  probe.l_type = read_only ? F_RDLCK : F_WRLCK;
  probe.l_whence = SEEK_SET;
  probe.l_start = 0x40000000;  // SQLite's lock bytes (PENDING_BYTE and on)
  probe.l_len = 512 + 2;
  int rc = ::fcntl(fd, F_GETLK, &probe);
  int err = errno;
  ::close(fd);  // before sqlite3_open: closing it later would drop SQLite's own locks
  if (rc != 0 && (err == ENOLCK || err == ENOSYS || err == EOPNOTSUPP)) {
    return Status::FailedPrecondition(path + ": " + LockFailure("a lock call on the database (fcntl)", err));
  }
  return Status::OK();
}

Result<std::unique_ptr<Store>> SqliteStore::Create(const std::string& path, bool read_only) {
  std::string network;  // the network filesystem the database is on, if any
  if (read_only) {
    // SQLite's "unable to open database file" does not say the study has no database yet.
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) return Status::NotFound(path + ": no study database here");
      return Status::IOError(path + ": " + std::strerror(errno));
    }
  } else {
    // Create the file ourselves: SQLite would create it 0644 (less umask), and trial parameters
    // and log paths are nobody else's business. SQLite gives -wal and -shm the same mode.
    // In a folder of ours: another user's folder could swap the database's companions (-wal,
    // .lock) under us. Never through a planted link, onto a device or onto another user's file
    // (base/private_file.h).
    std::string parent = path.find('/') == std::string::npos ? "." : path.substr(0, path.rfind('/'));
    if (parent.empty()) parent = "/";
    struct stat dir;
    if (::stat(parent.c_str(), &dir) != 0) return Status::IOError(parent + ": " + std::strerror(errno));
    if (!S_ISDIR(dir.st_mode) || dir.st_uid != ::geteuid()) {
      return Status::FailedPrecondition(path + ": the database must be in a folder you own (" + parent +
                                        " belongs to uid " + std::to_string(dir.st_uid) + ")");
    }
    auto fd = OpenPrivateFile(path, PrivateOpen::kReadWrite, 0600);
    if (!fd.ok()) return fd.status().WithContext("the study's database");
  }

  SWEEP_RETURN_IF_ERROR(ProbeLocks(path, read_only));
  sqlite3* raw = nullptr;
  // NOMUTEX: a Store is used by one thread (store.h), so SQLite's per-call connection mutex
  // only costs time (about 4% of bulk ingestion).
  int flags = (read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_NOMUTEX;
  int rc = sqlite3_open_v2(path.c_str(), &raw, flags, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK) return SqliteError(raw, path, "open", rc);
  // Extended codes let SqliteError tell a foreign-key failure from other constraint failures.
  sqlite3_extended_result_codes(raw, 1);
  SWEEP_RETURN_IF_ERROR(ExecScript(raw, path, kSqlConnectionPragmas, "configure connection"));

  auto version = QueryInt(raw, path, kSqlReadUserVersion, "read schema version");
  if (!version.ok()) return version.status();
  if (*version > SchemaVersion()) return TooNew(path, *version);
  if (read_only) {
    if (*version == 0) return NotOurs(path);
    // Statements are prepared against the current schema, and a reader must not migrate.
    if (*version < SchemaVersion()) {
      return Status::FailedPrecondition(path + ": database schema version " + std::to_string(*version) +
                                        " is older than this slurmsweep's (" + std::to_string(SchemaVersion()) +
                                        "); it is upgraded the next time the study is opened for writing");
    }
  } else {
    if (*version == 0) {
      // Version 0 with tables is somebody else's database: do not add ours to it.
      auto objects = QueryInt(raw, path, kSqlCountSchemaObjects, "inspect schema");
      if (!objects.ok()) return objects.status();
      if (*objects > 0) return NotOurs(path);
    }
    // WAL lets `status` and `report` read while the orchestrator writes, on one host. On a
    // network filesystem a rollback journal: WAL's index lives in shared memory that other hosts
    // do not see (sqlite.org/wal.html), so they would read a stale database. SQLite silently
    // keeps the old mode where the new one cannot work, so check what we got.
    network = NetworkFilesystem(path);
    const char* want = network.empty() ? "wal" : "truncate";
    auto mode = QueryText(raw, path, network.empty() ? kSqlEnableWal : kSqlEnableRollbackJournal,
                          network.empty() ? "enable WAL" : "use a rollback journal");
    if (!mode.ok()) return mode.status();
    if (*mode != want) {
      return Status::IOError(path + ": cannot use " +
                             (network.empty() ? std::string("write-ahead logging") : "a rollback journal") +
                             " (journal mode stays '" + *mode + "')" +
                             (network.empty() ? "" : "; is a run of this study going on elsewhere?"));
    }
    if (*version < SchemaVersion()) SWEEP_RETURN_IF_ERROR(Migrate(raw, path));
  }

  std::unique_ptr<SqliteStore> store(new SqliteStore(path, std::move(db), read_only));
  if (!network.empty()) {
    store->journal_note_ = path + " is on a network filesystem (" + network +
                           "): using a rollback journal instead of write-ahead logging, which needs every "
                           "process on one host; `status` and `report` may wait while a tick writes";
  }
  SWEEP_RETURN_IF_ERROR(store->PrepareStatements());
  return std::unique_ptr<Store>(std::move(store));
}

Status SqliteStore::PrepareStatements() {
  const std::pair<StmtPtr*, const char*> all[] = {
      {&stmts_.begin, kSqlBegin},
      {&stmts_.commit, kSqlCommit},
      {&stmts_.rollback, kSqlRollback},
      {&stmts_.upsert_study, kSqlUpsertStudy},
      {&stmts_.get_study, kSqlGetStudy},
      {&stmts_.study_exists, kSqlStudyExists},
      {&stmts_.insert_trial, kSqlInsertTrial},
      {&stmts_.trial_id_by_key, kSqlTrialIdByKey},
      {&stmts_.list_trials, kSqlListTrials},
      {&stmts_.get_trial, kSqlGetTrial},
      {&stmts_.update_trial, kSqlUpdateTrial},
      {&stmts_.set_log_offset, kSqlSetLogOffset},
      {&stmts_.set_telemetry_offset, kSqlSetTelemetryOffset},
      {&stmts_.reset_offsets, kSqlResetOffsets},
      {&stmts_.delete_metrics, kSqlDeleteMetrics},
      {&stmts_.insert_metric, kSqlInsertMetric},
      {&stmts_.insert_metric_name, kSqlInsertMetricName},
      {&stmts_.metric_name_id, kSqlMetricNameId},
      {&stmts_.metric_names, kSqlMetricNames},
      {&stmts_.metrics, kSqlMetrics},
      {&stmts_.metric_series, kSqlMetricSeries},
      {&stmts_.last_metric, kSqlLastMetric},
      {&stmts_.count_metrics, kSqlCountMetrics},
      {&stmts_.add_event, kSqlAddEvent},
      {&stmts_.events, kSqlEvents},
      {&stmts_.read_lease, kSqlReadLease},
      {&stmts_.write_lease, kSqlWriteLease},
      {&stmts_.renew_lease, kSqlRenewLease},
      {&stmts_.release_lease, kSqlReleaseLease},
      {&stmts_.metric_tail, kSqlMetricTail},
      {&stmts_.metric_range, kSqlMetricRange},
      {&stmts_.metric_before, kSqlMetricBefore},
      {&stmts_.series_by_id, kSqlSeriesById},
      {&stmts_.trial_summary, kSqlTrialSummary},
      {&stmts_.study_summaries, kSqlStudySummaries},
      {&stmts_.write_summary, kSqlWriteSummary},
      {&stmts_.write_bucket, kSqlWriteBucket},
      {&stmts_.buckets, kSqlBuckets},
      {&stmts_.delete_buckets_of, kSqlDeleteBucketsOf},
      {&stmts_.delete_summaries, kSqlDeleteSummaries},
      {&stmts_.delete_buckets, kSqlDeleteBuckets},
  };
  for (const auto& [slot, sql] : all) {
    sqlite3_stmt* raw = nullptr;
    // PERSISTENT: these live as long as the connection, so SQLite may allocate them accordingly.
    int rc = sqlite3_prepare_v3(db_.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
    slot->reset(raw);
    if (rc != SQLITE_OK) return SqliteError(db_.get(), path_, std::string("prepare \"") + sql + "\"", rc);
  }
  return Status::OK();
}

Status SqliteStore::CheckWritable(std::string_view what) const {
  if (!read_only_) return Status::OK();
  return Status::FailedPrecondition(path_ + ": " + std::string(what) + ": the database was opened read-only");
}

Status SqliteStore::RequireStudy(int64_t study_id) {
  Query q = Use(stmts_.study_exists, "look up study");
  q.BindInt(1, study_id);
  auto row = q.Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::NotFound(path_ + ": study " + std::to_string(study_id));
  return Status::OK();
}

Status SqliteStore::InTransaction(const std::function<Status()>& fn) {
  SWEEP_RETURN_IF_ERROR(CheckWritable("transaction"));
  if (txn_depth_ > 0) {
    ++txn_depth_;
    // Restores the depth even if fn throws.
    struct Leave {
      int& depth;
      ~Leave() { --depth; }
    } leave{txn_depth_};
    Status s = fn();
    if (!s.ok() && !nested_failure_) nested_failure_ = s;
    return s;
  }
  return RunTransaction(fn);
}

Status SqliteStore::RunTransaction(const std::function<Status()>& fn) {
  {
    Query begin = Use(stmts_.begin, "begin transaction");
    SWEEP_RETURN_IF_ERROR(begin.Run());
  }
  // Ends the transaction even if fn throws; the normal paths below end it first themselves.
  struct Outermost {
    SqliteStore& store;
    bool committed = false;
    ~Outermost() {
      store.txn_depth_ = 0;
      if (!committed) store.summaries_.clear();
      store.nested_failure_.reset();
      if (!sqlite3_get_autocommit(store.db_.get())) {
        store.name_ids_.clear();
        store.names_by_id_.clear();
      }
      RollbackIfOpen(store.db_.get());
    }
  } guard{*this};
  txn_depth_ = 1;
  nested_failure_.reset();

  Status s = fn();
  if (s.ok() && nested_failure_) {
    s = nested_failure_->WithContext("transaction rolled back because a nested step failed");
  }
  if (s.ok()) {
    Query commit = Use(stmts_.commit, "commit transaction");
    s = commit.Run();
    guard.committed = s.ok();
    if (s.ok()) return s;
  }
  name_ids_.clear();  // names this transaction added are gone
  names_by_id_.clear();
  // SQLite may already have rolled back by itself (SQLITE_FULL, SQLITE_IOERR, ...).
  if (!sqlite3_get_autocommit(db_.get())) {
    Query rollback = Use(stmts_.rollback, "roll back transaction");
    Status r = rollback.Run();
    // The guard's last-ditch ROLLBACK follows; the caller still learns of the original error.
    if (!r.ok()) s = s.WithContext("rollback failed too (" + r.message() + ")");
  }
  return s;
}

Result<int64_t> SqliteStore::UpsertStudy(const std::string& name, const std::string& spec_path,
                                         const std::string& spec_hash, double now) {
  SWEEP_RETURN_IF_ERROR(CheckWritable("save study"));
  int64_t id = 0;
  Status s = InTransaction([&]() -> Status {
    {
      Query q = Use(stmts_.upsert_study, "save study '" + name + "'");
      q.BindText(1, name);
      q.BindText(2, spec_path);
      q.BindText(3, spec_hash);
      q.BindReal(4, now);
      SWEEP_RETURN_IF_ERROR(q.Run());
    }
    // Not RETURNING: that needs SQLite 3.35, and we would read the row inside this transaction anyway.
    Query q = Use(stmts_.get_study, "look up study '" + name + "'");
    q.BindText(1, name);
    auto row = q.Step();
    if (!row.ok()) return row.status();
    if (!*row) return Status::Internal(path_ + ": study '" + name + "' vanished after saving it");
    id = q.Int(0);
    return Status::OK();
  });
  if (!s.ok()) return s;
  return id;
}

Result<StudyRecord> SqliteStore::GetStudy(const std::string& name) {
  Query q = Use(stmts_.get_study, "look up study '" + name + "'");
  q.BindText(1, name);
  auto row = q.Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::NotFound(path_ + ": study '" + name + "'");
  StudyRecord study;
  study.id = q.Int(0);
  study.name = q.Text(1);
  study.spec_path = q.Text(2);
  study.spec_hash = q.Text(3);
  study.created_at = q.Real(4);
  return study;
}

Status SqliteStore::InsertTrialsIfAbsent(int64_t study_id, std::vector<TrialRecord>& trials) {
  SWEEP_RETURN_IF_ERROR(CheckWritable("insert trials"));
  // Ids go into `trials` only after the commit, so a failure leaves the caller's records as they were.
  std::vector<int64_t> ids;
  ids.reserve(trials.size());
  SWEEP_RETURN_IF_ERROR(InTransaction([&]() -> Status {
    SWEEP_RETURN_IF_ERROR(RequireStudy(study_id));
    for (const TrialRecord& t : trials) {
      {
        Query q = Use(stmts_.insert_trial, "insert trial '" + t.trial_key + "'");
        q.BindInt(1, study_id);
        q.BindText(2, t.trial_key);
        q.BindText(3, t.params_json);
        q.BindText(4, t.state);
        q.BindText(5, t.reason);
        q.BindText(6, t.job_id);
        q.BindText(7, t.slurm_state);
        q.BindText(8, t.exit_code);
        q.BindInt(9, t.attempt);
        q.BindOptReal(10, t.submitted_at);
        q.BindOptReal(11, t.started_at);
        q.BindOptReal(12, t.ended_at);
        q.BindText(13, t.log_path);
        q.BindInt(14, t.log_offset);
        SWEEP_RETURN_IF_ERROR(q.Run());
      }
      Query q = Use(stmts_.trial_id_by_key, "look up trial '" + t.trial_key + "'");
      q.BindInt(1, study_id);
      q.BindText(2, t.trial_key);
      auto row = q.Step();
      if (!row.ok()) return row.status();
      if (!*row) return Status::Internal(path_ + ": trial '" + t.trial_key + "' vanished after inserting it");
      ids.push_back(q.Int(0));
    }
    return Status::OK();
  }));
  for (size_t i = 0; i < trials.size(); ++i) {
    trials[i].id = ids[i];
    trials[i].study_id = study_id;
  }
  return Status::OK();
}

Result<std::vector<TrialRecord>> SqliteStore::ListTrials(int64_t study_id) {
  Query q = Use(stmts_.list_trials, "list trials of study " + std::to_string(study_id));
  q.BindInt(1, study_id);
  std::vector<TrialRecord> trials;
  SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] { trials.push_back(ReadTrial(q)); }));
  return trials;
}

Result<TrialRecord> SqliteStore::GetTrial(int64_t trial_id) {
  Query q = Use(stmts_.get_trial, "look up trial " + std::to_string(trial_id));
  q.BindInt(1, trial_id);
  auto row = q.Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::NotFound(path_ + ": trial " + std::to_string(trial_id));
  return ReadTrial(q);
}

Status SqliteStore::UpdateTrial(const TrialRecord& trial) {
  std::string what = "update trial " + std::to_string(trial.id);
  SWEEP_RETURN_IF_ERROR(CheckWritable(what));
  Query q = Use(stmts_.update_trial, what);
  q.BindInt(1, trial.id);
  q.BindText(2, trial.state);
  q.BindText(3, trial.reason);
  q.BindText(4, trial.job_id);
  q.BindText(5, trial.slurm_state);
  q.BindText(6, trial.exit_code);
  q.BindInt(7, trial.attempt);
  q.BindOptReal(8, trial.submitted_at);
  q.BindOptReal(9, trial.started_at);
  q.BindOptReal(10, trial.ended_at);
  q.BindText(11, trial.log_path);
  q.BindText(12, trial.stop_request);
  q.BindText(13, trial.array_name);
  q.BindInt(14, trial.array_index);
  q.BindReal(15, trial.prior_run_s);
  q.BindInt(16, trial.job_restarts);
  SWEEP_RETURN_IF_ERROR(q.Run());
  // sqlite3_changes counts matched rows, even when no value changed.
  if (sqlite3_changes(db_.get()) == 0) return Status::NotFound(path_ + ": trial " + std::to_string(trial.id));
  return Status::OK();
}

Status SqliteStore::AppendMetrics(int64_t trial_id, const std::vector<MetricRow>& rows, int64_t new_offset) {
  return Append(trial_id, rows, new_offset, stmts_.set_log_offset, "log");
}

Status SqliteStore::AppendTelemetry(int64_t trial_id, const std::vector<MetricRow>& rows, int64_t new_offset) {
  return Append(trial_id, rows, new_offset, stmts_.set_telemetry_offset, "telemetry");
}

Status SqliteStore::Append(int64_t trial_id, const std::vector<MetricRow>& rows, int64_t new_offset,
                           const StmtPtr& set_offset, const char* source) {
  std::string what = std::string("append ") + source + " metrics of trial " + std::to_string(trial_id);
  SWEEP_RETURN_IF_ERROR(CheckWritable(what));
  if (new_offset < 0) {
    return Status::InvalidArgument(path_ + ": " + what + ": negative offset " + std::to_string(new_offset));
  }
  return InTransaction([&]() -> Status {
    // The offset first: it also tells us whether the trial exists before any row is written.
    {
      Query q = Use(set_offset, what);
      q.BindInt(1, trial_id);
      q.BindInt(2, new_offset);
      SWEEP_RETURN_IF_ERROR(q.Run());
      if (sqlite3_changes(db_.get()) == 0) return Status::NotFound(path_ + ": trial " + std::to_string(trial_id));
    }
    if (rows.empty()) return Status::OK();
    auto cache = CachedSummaries(trial_id);
    if (!cache.ok()) return cache.status();
    // Metrics this call changed (written once at the end), and those to rebuild from their rows.
    struct Touched {
      MetricSummary* summary;
      int64_t first_new_bucket;  // complete buckets before this call (or after a merge)
      std::vector<SeriesBucket> completed;
      bool rebuild = false;
    };
    std::vector<std::pair<int64_t, Touched>> touched;  // a handful: a line's metrics
    Query insert = Use(stmts_.insert_metric, what);
    for (const MetricRow& m : rows) {
      auto name_id = MetricNameId(m.name);  // from memory after a name's first use
      if (!name_id.ok()) return name_id.status();
      insert.BindInt(1, trial_id);
      insert.BindInt(2, *name_id);
      insert.BindInt(3, m.step);
      insert.BindReal(4, m.time_s);
      insert.BindReal(5, m.value);
      SWEEP_RETURN_IF_ERROR(insert.Run());
      insert.Rewind();
      if (sqlite3_changes(db_.get()) == 0) continue;  // a replayed row: already counted
      auto t = std::find_if(touched.begin(), touched.end(), [&](const auto& x) { return x.first == *name_id; });
      if (t == touched.end()) {
        MetricSummary& s = (**cache)[*name_id];
        if (s.points == 0) s.name = m.name;
        t = touched.insert(touched.end(), {*name_id, Touched{&s, s.complete, {}}});
      }
      Touched& u = t->second;
      MetricSummary& s = *u.summary;
      if (u.rebuild) continue;
      if (s.points > 0 && m.step <= s.last_step) {
        // Before the last point (a gap filled): the buckets would no longer be consecutive
        // points, so this metric is recomputed from its rows after the loop.
        u.rebuild = true;
        continue;
      }
      if (s.NeedsMerge()) {
        // Every complete bucket: those stored before this call, then this call's.
        std::vector<SeriesBucket> all;
        all.reserve(static_cast<size_t>(s.complete));
        {
          Query q = Use(stmts_.buckets, what);
          SWEEP_RETURN_IF_ERROR(ReadBuckets(q, trial_id, *name_id, all));
        }
        all.resize(static_cast<size_t>(u.first_new_bucket));
        all.insert(all.end(), u.completed.begin(), u.completed.end());
        {
          Query q = Use(stmts_.delete_buckets_of, what);
          q.BindInt(1, trial_id);
          q.BindInt(2, *name_id);
          SWEEP_RETURN_IF_ERROR(q.Run());
        }
        u.completed = s.MergeAll(all);
        u.first_new_bucket = 0;
      }
      s.Add(m.step, m.time_s, m.value, u.completed);
    }
    Query bucket = Use(stmts_.write_bucket, what);
    Query summary = Use(stmts_.write_summary, what);
    for (auto& [name_id, u] : touched) {
      if (u.rebuild) {
        SWEEP_RETURN_IF_ERROR(RebuildSummary(trial_id, name_id, *u.summary));
        continue;
      }
      for (size_t i = 0; i < u.completed.size(); ++i) {
        SWEEP_RETURN_IF_ERROR(
            WriteBucketRow(bucket, trial_id, name_id, u.first_new_bucket + static_cast<int64_t>(i), u.completed[i]));
      }
      SWEEP_RETURN_IF_ERROR(WriteSummaryRow(summary, trial_id, name_id, *u.summary));
    }
    return Status::OK();
  });
}

Result<SqliteStore::SummaryCache*> SqliteStore::CachedSummaries(int64_t trial_id) {
  if (auto it = summaries_.find(trial_id); it != summaries_.end()) return &it->second;
  SummaryCache cache;
  Query q = Use(stmts_.trial_summary, "read metric summaries of trial " + std::to_string(trial_id));
  q.BindInt(1, trial_id);
  SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] { ReadSummary(q, 1, cache[q.Int(0)]); }));
  return &summaries_.emplace(trial_id, std::move(cache)).first->second;
}

Status SqliteStore::RebuildSummary(int64_t trial_id, int64_t name_id, MetricSummary& m) {
  std::string what =
      "rebuild the summary of metric " + std::to_string(name_id) + " of trial " + std::to_string(trial_id);
  std::vector<CurvePoint> points;
  points.reserve(static_cast<size_t>(m.points) + 16);
  {
    Query q = Use(stmts_.series_by_id, what);
    q.BindInt(1, trial_id);
    q.BindInt(2, name_id);
    SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] { points.push_back({q.Int(0), q.Real(1), q.Real(2)}); }));
  }
  std::string name = std::move(m.name);
  m = SummarizeSeries(std::move(name), points);
  {
    Query q = Use(stmts_.delete_buckets_of, what);
    q.BindInt(1, trial_id);
    q.BindInt(2, name_id);
    SWEEP_RETURN_IF_ERROR(q.Run());
  }
  Query bucket = Use(stmts_.write_bucket, what);
  for (size_t i = 0; i < m.buckets.size(); ++i) {
    SWEEP_RETURN_IF_ERROR(WriteBucketRow(bucket, trial_id, name_id, static_cast<int64_t>(i), m.buckets[i]));
  }
  m.buckets.clear();  // the cache keeps no series
  Query summary = Use(stmts_.write_summary, what);
  return WriteSummaryRow(summary, trial_id, name_id, m);
}

Result<const std::string*> SqliteStore::MetricName(int64_t name_id) {
  auto it = names_by_id_.find(name_id);
  if (it != names_by_id_.end()) return &it->second;
  Query q = Use(stmts_.metric_names, "read metric names");
  SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] { names_by_id_[q.Int(0)] = q.Text(1); }));
  it = names_by_id_.find(name_id);
  if (it == names_by_id_.end())
    return Status::Internal(path_ + ": metric number " + std::to_string(name_id) + " has no name");
  return &it->second;
}

Status SqliteStore::ReadSummaries(Query& q, int trial_col, std::vector<TrialSummary>& out) {
  for (;;) {
    auto row = q.Step();
    if (!row.ok()) return row.status();
    if (!*row) break;
    int64_t trial_id = trial_col >= 0 ? q.Int(trial_col) : 0;
    if (out.empty() || (trial_col >= 0 && out.back().trial_id != trial_id)) out.emplace_back().trial_id = trial_id;
    MetricSummary& m = out.back().metrics.emplace_back();
    int name_col = trial_col >= 0 ? trial_col + 1 : 0;
    auto name = MetricName(q.Int(name_col));
    if (!name.ok()) return name.status();
    m.name = **name;
    ReadSummary(q, name_col + 1, m);
  }
  for (TrialSummary& t : out) {
    std::sort(t.metrics.begin(), t.metrics.end(),
              [](const MetricSummary& a, const MetricSummary& b) { return a.name < b.name; });
  }
  return Status::OK();
}

Status SqliteStore::FillSeries(TrialSummary& t, const std::vector<std::string>& series_of) {
  for (const std::string& name : series_of) {
    auto found =
        std::find_if(t.metrics.begin(), t.metrics.end(), [&](const MetricSummary& m) { return m.name == name; });
    if (found == t.metrics.end() || found->complete == 0) continue;
    MetricSummary& m = *found;
    auto name_id = name_ids_.find(name);
    int64_t id = 0;
    if (name_id != name_ids_.end()) {
      id = name_id->second;
    } else {
      Query q = Use(stmts_.metric_name_id, "look up metric " + name);
      q.BindText(1, name);
      auto row = q.Step();
      if (!row.ok()) return row.status();
      if (!*row) continue;
      id = name_ids_[name] = q.Int(0);  // an existing number: safe to keep, as MetricNameId does
    }
    if (!m.buckets.empty()) continue;  // named twice in series_of
    m.buckets.reserve(static_cast<size_t>(m.complete));
    Query q = Use(stmts_.buckets, "read the series of " + name + " of trial " + std::to_string(t.trial_id));
    SWEEP_RETURN_IF_ERROR(ReadBuckets(q, t.trial_id, id, m.buckets));
  }
  return Status::OK();
}

Result<TrialSummary> SqliteStore::Summary(int64_t trial_id, const std::vector<std::string>& series_of) {
  std::vector<TrialSummary> one;
  {
    Query q = Use(stmts_.trial_summary, "read metric summaries of trial " + std::to_string(trial_id));
    q.BindInt(1, trial_id);
    SWEEP_RETURN_IF_ERROR(ReadSummaries(q, -1, one));
  }
  if (one.empty()) one.emplace_back();
  one[0].trial_id = trial_id;
  SWEEP_RETURN_IF_ERROR(FillSeries(one[0], series_of));
  return std::move(one[0]);
}

Result<std::vector<TrialSummary>> SqliteStore::Summaries(int64_t study_id, const std::vector<std::string>& series_of) {
  std::vector<TrialSummary> all;
  {
    Query q = Use(stmts_.study_summaries, "read metric summaries of study " + std::to_string(study_id));
    q.BindInt(1, study_id);
    SWEEP_RETURN_IF_ERROR(ReadSummaries(q, 0, all));
  }
  if (!series_of.empty()) {
    for (TrialSummary& t : all) SWEEP_RETURN_IF_ERROR(FillSeries(t, series_of));
  }
  return all;
}

Result<int64_t> SqliteStore::MetricNameId(const std::string& name) {
  if (auto it = name_ids_.find(name); it != name_ids_.end()) return it->second;
  std::string what = "add metric name '" + name + "'";
  {
    Query q = Use(stmts_.insert_metric_name, what);
    q.BindText(1, name);
    SWEEP_RETURN_IF_ERROR(q.Run());
  }
  Query q = Use(stmts_.metric_name_id, what);
  q.BindText(1, name);
  auto row = q.Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::Internal(path_ + ": " + what + ": not found after insert");
  return name_ids_[name] = q.Int(0);
}

Status SqliteStore::ResetMetrics(int64_t trial_id) {
  std::string what = "reset metrics of trial " + std::to_string(trial_id);
  SWEEP_RETURN_IF_ERROR(CheckWritable(what));
  return InTransaction([&]() -> Status {
    {
      Query q = Use(stmts_.reset_offsets, what);
      q.BindInt(1, trial_id);
      SWEEP_RETURN_IF_ERROR(q.Run());
      if (sqlite3_changes(db_.get()) == 0) return Status::NotFound(path_ + ": trial " + std::to_string(trial_id));
    }
    summaries_.erase(trial_id);
    for (const StmtPtr* stmt : {&stmts_.delete_metrics, &stmts_.delete_summaries, &stmts_.delete_buckets}) {
      Query q = Use(*stmt, what);
      q.BindInt(1, trial_id);
      SWEEP_RETURN_IF_ERROR(q.Run());
    }
    return Status::OK();
  });
}

Result<std::vector<MetricRow>> SqliteStore::Metrics(int64_t trial_id) {
  auto table = MetricTable(trial_id);
  if (!table.ok()) return table.status();
  size_t n = 0;
  for (const MetricColumns& c : *table) n += c.steps.size();
  std::vector<MetricRow> rows;
  rows.reserve(n);
  for (const MetricColumns& c : *table) {
    for (size_t i = 0; i < c.steps.size(); ++i) rows.push_back({c.steps[i], c.times[i], c.name, c.values[i]});
  }
  return rows;
}

Result<std::vector<MetricColumns>> SqliteStore::MetricTable(int64_t trial_id) {
  std::string what = "read metrics of trial " + std::to_string(trial_id);
  // The summary gives each metric's size: every column is allocated once.
  auto summary = Summary(trial_id, {});
  if (!summary.ok()) return summary.status();
  std::vector<MetricColumns> table;
  table.reserve(summary->metrics.size());
  std::vector<int> slot;  // by metric number: index into table, -1 if none yet
  auto column = [&](int64_t name_id) -> Result<MetricColumns*> {
    if (name_id < 0) return Status::Internal(path_ + ": " + what + ": negative metric number");
    if (static_cast<size_t>(name_id) >= slot.size()) slot.resize(static_cast<size_t>(name_id) + 1, -1);
    if (slot[name_id] < 0) {
      auto name = MetricName(name_id);
      if (!name.ok()) return name.status();
      slot[name_id] = static_cast<int>(table.size());
      MetricColumns& c = table.emplace_back();
      c.name = **name;
      if (const MetricSummary* m = summary->Find(c.name)) {
        // A run may add rows between the two reads: a few more than counted only grow once.
        size_t n = static_cast<size_t>(m->points);
        c.steps.reserve(n);
        c.times.reserve(n);
        c.values.reserve(n);
      }
    }
    return &table[slot[name_id]];
  };
  {
    // In key order (step, then metric number): no sort and no join in SQL.
    Query q = Use(stmts_.metrics, what);
    q.BindInt(1, trial_id);
    int64_t last_id = -1;
    MetricColumns* c = nullptr;
    for (;;) {
      auto row = q.Step();
      if (!row.ok()) return row.status();
      if (!*row) break;
      int64_t id = q.Int(0);
      if (id != last_id || !c) {
        auto col = column(id);
        if (!col.ok()) return col.status();
        c = *col;
        last_id = id;
      }
      c->steps.push_back(q.Int(1));
      c->times.push_back(q.Real(2));
      c->values.push_back(q.Real(3));
    }
  }
  std::sort(table.begin(), table.end(), [](const MetricColumns& a, const MetricColumns& b) { return a.name < b.name; });
  return table;
}

Result<std::vector<MetricRow>> SqliteStore::MetricSeries(int64_t trial_id, const std::string& name) {
  Query q = Use(stmts_.metric_series, "read " + name + " of trial " + std::to_string(trial_id));
  q.BindInt(1, trial_id);
  q.BindText(2, name);
  std::vector<MetricRow> rows;
  for (;;) {
    auto row = q.Step();
    if (!row.ok()) return row.status();
    if (!*row) return rows;
    rows.push_back(ReadMetric(q));
  }
}

Result<std::optional<MetricRow>> SqliteStore::LastMetric(int64_t trial_id, const std::string& name) {
  Query q = Use(stmts_.last_metric, "read last " + name + " of trial " + std::to_string(trial_id));
  q.BindInt(1, trial_id);
  q.BindText(2, name);
  auto row = q.Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<MetricRow>();
  return std::optional<MetricRow>(ReadMetric(q));
}

Result<std::vector<CurvePoint>> SqliteStore::MetricRange(int64_t trial_id, const std::string& name, int64_t first_step,
                                                         int64_t last_step, size_t before) {
  std::string what = "read steps " + std::to_string(first_step) + " to " + std::to_string(last_step) + " of " + name +
                     " of trial " + std::to_string(trial_id);
  std::vector<CurvePoint> points;
  if (before > 0) {
    Query q = Use(stmts_.metric_before, what);
    q.BindInt(1, trial_id);
    q.BindText(2, name);
    q.BindInt(3, first_step);
    q.BindInt(4, static_cast<int64_t>(before));
    SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] { points.push_back({q.Int(0), q.Real(1), q.Real(2)}); }));
    std::reverse(points.begin(), points.end());
  }
  Query q = Use(stmts_.metric_range, what);
  q.BindInt(1, trial_id);
  q.BindText(2, name);
  q.BindInt(3, first_step);
  q.BindInt(4, last_step);
  SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] { points.push_back({q.Int(0), q.Real(1), q.Real(2)}); }));
  return points;
}

Result<std::vector<double>> SqliteStore::MetricTail(int64_t trial_id, const std::string& name, size_t n) {
  Query q = Use(stmts_.metric_tail, "read the last points of " + name + " of trial " + std::to_string(trial_id));
  q.BindInt(1, trial_id);
  q.BindText(2, name);
  q.BindInt(3, static_cast<int64_t>(n));
  std::vector<double> values;
  values.reserve(n);
  SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] { values.push_back(q.Real(0)); }));
  std::reverse(values.begin(), values.end());
  return values;
}

Result<int64_t> SqliteStore::CountMetrics(int64_t trial_id) {
  Query q = Use(stmts_.count_metrics, "count metrics of trial " + std::to_string(trial_id));
  q.BindInt(1, trial_id);
  auto row = q.Step();
  if (!row.ok()) return row.status();
  if (!*row) return Status::Internal(path_ + ": count(*) returned no row");
  return q.Int(0);
}

Status SqliteStore::AddEvent(int64_t study_id, std::optional<int64_t> trial_id, double at, const std::string& kind,
                             const std::string& message) {
  SWEEP_RETURN_IF_ERROR(CheckWritable("add event"));
  Query q = Use(stmts_.add_event, "add " + kind + " event to study " + std::to_string(study_id));
  q.BindInt(1, study_id);
  q.BindOptInt(2, trial_id);
  q.BindReal(3, at);
  q.BindText(4, kind);
  q.BindText(5, message);
  return q.Run();
}

Result<std::vector<EventRecord>> SqliteStore::Events(int64_t study_id) {
  Query q = Use(stmts_.events, "read events of study " + std::to_string(study_id));
  q.BindInt(1, study_id);
  std::vector<EventRecord> events;
  SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] {
    EventRecord e;
    e.id = q.Int(0);
    e.trial_id = q.OptInt(1);
    e.at = q.Real(2);
    e.kind = q.Text(3);
    e.message = q.Text(4);
    events.push_back(std::move(e));
  }));
  return events;
}

Result<std::optional<LeaseRecord>> SqliteStore::ReadLease() {
  Query q = Use(stmts_.read_lease, "read the controller's lease");
  auto row = q.Step();
  if (!row.ok()) return row.status();
  if (!*row) return std::optional<LeaseRecord>();
  LeaseRecord l;
  l.token = q.Text(0);
  l.host = q.Text(1);
  l.pid = q.Int(2);
  l.boot_id = q.Text(3);
  l.started_at = q.Real(4);
  l.heartbeat_at = q.Real(5);
  return std::optional<LeaseRecord>(std::move(l));
}

Status SqliteStore::WriteLease(const LeaseRecord& lease) {
  SWEEP_RETURN_IF_ERROR(CheckWritable("write the controller's lease"));
  Query q = Use(stmts_.write_lease, "write the controller's lease");
  q.BindText(1, lease.token);
  q.BindText(2, lease.host);
  q.BindInt(3, lease.pid);
  q.BindText(4, lease.boot_id);
  q.BindReal(5, lease.started_at);
  q.BindReal(6, lease.heartbeat_at);
  return q.Run();
}

Result<bool> SqliteStore::RenewLease(const std::string& token, double now, int64_t pid) {
  SWEEP_RETURN_IF_ERROR(CheckWritable("renew the controller's lease"));
  Query q = Use(stmts_.renew_lease, "renew the controller's lease");
  q.BindText(1, token);
  q.BindReal(2, now);
  q.BindInt(3, pid);
  SWEEP_RETURN_IF_ERROR(q.Run());
  return sqlite3_changes(db_.get()) > 0;
}

Status SqliteStore::ReleaseLease(const std::string& token) {
  SWEEP_RETURN_IF_ERROR(CheckWritable("release the controller's lease"));
  Query q = Use(stmts_.release_lease, "release the controller's lease");
  q.BindText(1, token);
  return q.Run();
}

}  // namespace

int SchemaVersion() { return static_cast<int>(std::size(kMigrations)); }

bool IsDatabaseBusy(const Status& s) { return s.cause() == Status::Cause::kDatabaseBusy; }

Result<std::unique_ptr<Store>> Store::Open(const std::string& path) { return SqliteStore::Create(path, false); }

Result<std::unique_ptr<Store>> Store::OpenReadOnly(const std::string& path) { return SqliteStore::Create(path, true); }

}  // namespace sweep::store
