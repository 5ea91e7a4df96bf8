// Every SQL statement of the store, by name: connection pragmas, then the statements each connection
// prepares once (flux-core's content-sqlite does the same). The schema and its migrations are migrations.cc's.
// Internal to store/ (scripts/include-loops.py checks that no other folder includes it).
// Module store/: the only one that includes sqlite3.h.
#pragma once

namespace sweep::store {

// ---- Connection setup --------------------------------------------------------------------------

// busy_timeout comes first so that the statements after it wait for a lock instead of failing.
// Ingestion touches a page per metric series per tick: with SQLite's defaults (checkpoint every
// 1000 WAL pages, 2 MB cache) it spent most of its time flushing checkpoints and re-reading pages
// (bench/ingest_bench.cc). A checkpoint every 10000 pages (~40 MB of WAL) and a larger cache for
// the connection that writes cut that, at a bounded cost in memory and disk. A run's ticks
// checkpoint on a thread of their own instead (checkpointer.h: at 10,000 trials a tick passes 10000 pages).
inline constexpr const char* kSqlConnectionPragmas =
    "PRAGMA busy_timeout = 5000; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; "
    "PRAGMA wal_autocheckpoint = 10000;";
// The page cache: what `run` holds beside its stopping curves (issue 42: 512 MB at 10,000 trials).
// The writer's 8 MB keeps the pages a tick touches near the metrics' key ends; a reader (`status`, `report`,
// the run's report refresher beside the loop) reads each page about once, so SQLite's default 2 MB.
inline constexpr const char* kSqlWriterCache = "PRAGMA cache_size = -8192";
inline constexpr const char* kSqlReaderCache = "PRAGMA cache_size = -2000";
inline constexpr const char* kSqlEnableWal = "PRAGMA journal_mode = WAL";
// On a network filesystem: SQLite's WAL keeps its index in shared memory (-shm), which only
// processes of one host share; the rollback journal needs nothing but the file's locks. TRUNCATE,
// not DELETE: each commit then empties the journal instead of unlinking and creating it again, two
// round trips to the file server fewer (ingest_bench on sshfs).
inline constexpr const char* kSqlEnableRollbackJournal = "PRAGMA journal_mode = TRUNCATE";
inline constexpr const char* kSqlReadUserVersion = "PRAGMA user_version";
inline constexpr const char* kSqlSetUserVersionPrefix = "PRAGMA user_version = ";  // + the number
inline constexpr const char* kSqlCountSchemaObjects = "SELECT count(*) FROM sqlite_master";

// ---- Statements, prepared once per connection ------------------------------------------------

// IMMEDIATE takes the write lock up front: a deferred transaction that upgrades from read to
// write can get SQLITE_BUSY without the busy handler ever being consulted.
inline constexpr const char* kSqlBegin = "BEGIN IMMEDIATE";
inline constexpr const char* kSqlCommit = "COMMIT";
inline constexpr const char* kSqlRollback = "ROLLBACK";

inline constexpr const char* kSqlUpsertStudy =
    "INSERT INTO studies (name, spec_path, spec_hash, created_at) VALUES (?1, ?2, ?3, ?4) "
    "ON CONFLICT (name) DO UPDATE SET spec_path = excluded.spec_path, spec_hash = excluded.spec_hash";
inline constexpr const char* kSqlGetStudy =
    "SELECT id, name, spec_path, spec_hash, created_at FROM studies WHERE name = ?1";
inline constexpr const char* kSqlStudyExists = "SELECT 1 FROM studies WHERE id = ?1";

// DO NOTHING on the key only (not INSERT OR IGNORE, which would also swallow NOT NULL and
// CHECK failures): an existing trial keeps its state, so a rerun never resets it.
inline constexpr const char* kSqlInsertTrial =
    "INSERT INTO trials (study_id, trial_key, params_json, state, reason, job_id, slurm_state, "
    "exit_code, attempt, submitted_at, started_at, ended_at, log_path, log_offset) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14) "
    "ON CONFLICT (study_id, trial_key) DO NOTHING";
inline constexpr const char* kSqlTrialIdByKey = "SELECT id FROM trials WHERE study_id = ?1 AND trial_key = ?2";
// A trial's columns in the order ReadTrial expects, written once for every query that reads a
// trial (a macro only so that the literals concatenate).
#define SWEEP_TRIAL_COLUMNS                                                                                    \
  "id, study_id, trial_key, params_json, state, reason, job_id, slurm_state, exit_code, "                      \
  "attempt, submitted_at, started_at, ended_at, log_path, log_offset, stop_request, array_name, array_index, " \
  "prior_run_s, job_restarts, telemetry_offset"
inline constexpr const char* kSqlListTrials =
    "SELECT " SWEEP_TRIAL_COLUMNS " FROM trials WHERE study_id = ?1 ORDER BY id";
inline constexpr const char* kSqlGetTrial = "SELECT " SWEEP_TRIAL_COLUMNS " FROM trials WHERE id = ?1";
#undef SWEEP_TRIAL_COLUMNS
// log_offset is absent on purpose: only AppendMetrics moves it, together with the rows.
inline constexpr const char* kSqlUpdateTrial =
    "UPDATE trials SET state = ?2, reason = ?3, job_id = ?4, slurm_state = ?5, exit_code = ?6, "
    "attempt = ?7, submitted_at = ?8, started_at = ?9, ended_at = ?10, log_path = ?11, stop_request = ?12, "
    "array_name = ?13, array_index = ?14, prior_run_s = ?15, job_restarts = ?16 WHERE id = ?1";
inline constexpr const char* kSqlSetLogOffset = "UPDATE trials SET log_offset = ?2 WHERE id = ?1";
inline constexpr const char* kSqlSetTelemetryOffset = "UPDATE trials SET telemetry_offset = ?2 WHERE id = ?1";
inline constexpr const char* kSqlResetOffsets = "UPDATE trials SET log_offset = 0, telemetry_offset = 0 WHERE id = ?1";
inline constexpr const char* kSqlDeleteMetrics = "DELETE FROM metrics WHERE trial_id = ?1";

// A replayed row hits the primary key and is dropped; that is what makes ingestion exactly-once.
inline constexpr const char* kSqlInsertMetric =
    "INSERT INTO metrics (trial_id, name_id, step, time_s, value) VALUES (?1, ?2, ?3, ?4, ?5) "
    "ON CONFLICT (trial_id, step, name_id) DO NOTHING";
// kSqlInsertMetric for many rows at once (AppendMetricsMany): this, then kSqlInsertMetricsRow once per row joined by
// commas, then kSqlInsertMetricsEnd (SqliteStore prepares it for a fixed number of rows).
inline constexpr const char* kSqlInsertMetricsBegin =
    "INSERT INTO metrics (trial_id, name_id, step, time_s, value) VALUES ";
inline constexpr const char* kSqlInsertMetricsRow = "(?, ?, ?, ?, ?)";
inline constexpr const char* kSqlInsertMetricsEnd = " ON CONFLICT (trial_id, step, name_id) DO NOTHING";
inline constexpr const char* kSqlInsertMetricName =
    "INSERT INTO metric_names (name) VALUES (?1) ON CONFLICT (name) DO NOTHING";
inline constexpr const char* kSqlMetricNameId = "SELECT id FROM metric_names WHERE name = ?1";
// In key order (step, then metric number): no sort and no join in SQL; Metrics() groups the rows
// by name itself, which took the HTML report of 200 trials x 10k points from 4.6 s back to ~2.6 s.
inline constexpr const char* kSqlMetrics = "SELECT name_id, step, time_s, value FROM metrics WHERE trial_id = ?1";
inline constexpr const char* kSqlMetricNames = "SELECT id, name FROM metric_names";
// A range of the primary key: one metric of one trial, already in step order.
inline constexpr const char* kSqlMetricSeries =
    "SELECT step, time_s, ?2, value FROM metrics "
    "WHERE trial_id = ?1 AND name_id = (SELECT id FROM metric_names WHERE name = ?2) ORDER BY step";
inline constexpr const char* kSqlMetricTail =
    "SELECT value FROM metrics WHERE trial_id = ?1 AND name_id = (SELECT id FROM metric_names WHERE name = ?2) "
    "ORDER BY step DESC LIMIT ?3";
// A step range of the trial's primary key, one metric's rows kept: the points of one metric in a step range, and
// the few before it.
inline constexpr const char* kSqlMetricRange =
    "SELECT step, time_s, value FROM metrics WHERE trial_id = ?1 AND name_id = (SELECT id FROM metric_names WHERE "
    "name = ?2) AND step BETWEEN ?3 AND ?4 ORDER BY step";
inline constexpr const char* kSqlMetricBefore =
    "SELECT step, time_s, value FROM metrics WHERE trial_id = ?1 AND name_id = (SELECT id FROM metric_names WHERE "
    "name = ?2) AND step < ?3 ORDER BY step DESC LIMIT ?4";
// From the summary: its last point is the one with the greatest step.
inline constexpr const char* kSqlLastMetric =
    "SELECT last_step, last_time_s, ?2, last_value FROM metric_summaries "
    "WHERE trial_id = ?1 AND name_id = (SELECT id FROM metric_names WHERE name = ?2)";
inline constexpr const char* kSqlCountMetrics = "SELECT count(*) FROM metrics WHERE trial_id = ?1";
// The trial's rows in key (step) order, one metric's kept.
inline constexpr const char* kSqlSeriesById =
    "SELECT step, time_s, value FROM metrics WHERE trial_id = ?1 AND name_id = ?2 ORDER BY step";
// Every row in key order (trial, step, metric): the migration that builds the summaries reads each trial once.
inline constexpr const char* kSqlAllSeries =
    "SELECT trial_id, name_id, step, time_s, value FROM metrics ORDER BY trial_id, step, name_id";

// A summary row's columns after (trial_id, name_id), in the order ReadSummary and BindSummary use.
#define SWEEP_SUMMARY_COLUMNS                                                                               \
  "points, finite, first_step, first_time_s, first_value, last_step, last_time_s, last_value, max_time_s, " \
  "sum, min, max, stride, complete, open_first_step, open_last_step, open_last_time_s, open_points, "       \
  "open_finite, open_sum, open_smooth_min, open_smooth_max, recent"
inline constexpr const char* kSqlTrialSummary =
    "SELECT name_id, " SWEEP_SUMMARY_COLUMNS " FROM metric_summaries WHERE trial_id = ?1";
inline constexpr const char* kSqlStudySummaries =
    "SELECT s.trial_id, s.name_id, " SWEEP_SUMMARY_COLUMNS
    " FROM trials t JOIN metric_summaries s ON s.trial_id = t.id WHERE t.study_id = ?1 ORDER BY s.trial_id";
inline constexpr const char* kSqlWriteSummary =
    "REPLACE INTO metric_summaries (trial_id, name_id, " SWEEP_SUMMARY_COLUMNS
    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, "
    "?22, ?23, ?24, ?25)";
// kSqlWriteSummary for many rows at once, as kSqlInsertMetricsBegin is built.
inline constexpr const char* kSqlWriteSummariesBegin =
    "REPLACE INTO metric_summaries (trial_id, name_id, " SWEEP_SUMMARY_COLUMNS ") VALUES ";
inline constexpr const char* kSqlWriteSummariesRow =
    "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)";
#undef SWEEP_SUMMARY_COLUMNS
inline constexpr const char* kSqlWriteBucket =
    "REPLACE INTO metric_buckets (trial_id, name_id, bucket, first_step, last_step, last_time_s, points, finite, sum, "
    "smooth_min, smooth_max) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)";
inline constexpr const char* kSqlBuckets =
    "SELECT first_step, last_step, last_time_s, points, finite, sum, smooth_min, smooth_max FROM metric_buckets "
    "WHERE trial_id = ?1 AND name_id = ?2 ORDER BY bucket";
// One metric's complete buckets of every trial of a study, by trial then bucket (the primary key's
// order: no sort): Summaries reads a series for thousands of trials in one statement.
inline constexpr const char* kSqlStudyBuckets =
    "SELECT trial_id, first_step, last_step, last_time_s, points, finite, sum, smooth_min, smooth_max FROM "
    "metric_buckets WHERE name_id = ?2 AND trial_id IN (SELECT id FROM trials WHERE study_id = ?1) "
    "ORDER BY trial_id, bucket";
inline constexpr const char* kSqlDeleteBucketsOf = "DELETE FROM metric_buckets WHERE trial_id = ?1 AND name_id = ?2";
inline constexpr const char* kSqlDeleteSummaries = "DELETE FROM metric_summaries WHERE trial_id = ?1";
inline constexpr const char* kSqlDeleteBuckets = "DELETE FROM metric_buckets WHERE trial_id = ?1";

inline constexpr const char* kSqlAddEvent =
    "INSERT INTO events (study_id, trial_id, at, kind, message) VALUES (?1, ?2, ?3, ?4, ?5)";
inline constexpr const char* kSqlEvents =
    "SELECT id, trial_id, at, kind, message FROM events WHERE study_id = ?1 ORDER BY id";
inline constexpr const char* kSqlEventsAfter =
    "SELECT id, trial_id, at, kind, message FROM events WHERE study_id = ?1 AND kind = ?2 AND id > ?3 ORDER BY id";

inline constexpr const char* kSqlReadLease =
    "SELECT token, host, pid, boot_id, started_at, heartbeat_at FROM controller_lease WHERE id = 1";
inline constexpr const char* kSqlWriteLease =
    "REPLACE INTO controller_lease (id, token, host, pid, boot_id, started_at, heartbeat_at) "
    "VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6)";
// Moves only our own lease: a controller that took over has another token, and this one learns it
// from the count of changed rows.
inline constexpr const char* kSqlRenewLease =
    "UPDATE controller_lease SET heartbeat_at = ?2, pid = ?3 WHERE token = ?1";
inline constexpr const char* kSqlReleaseLease = "DELETE FROM controller_lease WHERE token = ?1";

}  // namespace sweep::store
