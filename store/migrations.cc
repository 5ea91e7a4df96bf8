// The schema's migrations; see migrations.h.
#include "store/migrations.h"

#include <iterator>
#include <map>
#include <vector>

#include "store/metric_summary.h"
#include "store/sql.h"
#include "store/sqlite_db.h"

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
    // 10: no index by metric (issue 42). Each tick's new point of each metric of each trial went to a leaf of its
    // own in metrics_by_name, one page per trial and metric written per tick besides the trial's one page of the
    // primary key: at 10,000 running trials the index was two thirds of a tick's inserts (0.23-0.35 s of 0.35-0.50).
    // Reading one metric now reads the trial's other metrics too, in the primary key's (step) order: the stopping
    // curves of a restart already read that way (MetricCurves), and the reports read one bucket's range or a final
    // window, which the key's step order bounds.
    R"sql(
DROP INDEX IF EXISTS metrics_by_name;
)sql",
};

// The last schema version that changed what the summaries hold: a migration from before it
// (re)builds them from the metrics.
constexpr int64_t kSummariesVersion = 7;

// Migration 6's C++ half, inside its transaction: every trial's rows read once, in the primary key's order (step,
// then metric), each metric's points gathered in step order, and its summary and buckets written as ingestion
// would have.
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
  int64_t trial = -1;
  std::map<int64_t, std::vector<CurvePoint>> series;  // the trial's, by metric number
  auto flush = [&]() -> Status {
    for (auto& [name, points] : series) {
      MetricSummary m = SummarizeSeries("", points);
      SWEEP_RETURN_IF_ERROR(WriteSummaryRow(write_summary, trial, name, m));
      for (size_t i = 0; i < m.buckets.size(); ++i) {
        SWEEP_RETURN_IF_ERROR(WriteBucketRow(write_bucket, trial, name, static_cast<int64_t>(i), m.buckets[i]));
      }
    }
    series.clear();
    return Status::OK();
  };
  Query q(db, path, all->get(), what);
  SWEEP_RETURN_IF_ERROR(q.ForEachRow([&] {
    if (q.Int(0) != trial) {
      SWEEP_RETURN_IF_ERROR(flush());
      trial = q.Int(0);
    }
    series[q.Int(1)].push_back({q.Int(2), q.Real(3), q.Real(4)});
    return Status::OK();
  }));
  return flush();
}

}  // namespace

int SchemaVersion() { return static_cast<int>(std::size(kMigrations)); }

Status TooNew(const std::string& path, int64_t version) {
  return Status::FailedPrecondition(path + ": database schema version " + std::to_string(version) +
                                    " is newer than this slurmsweep supports (" + std::to_string(SchemaVersion()) +
                                    "); use a newer slurmsweep");
}

Status NotOurs(const std::string& path) {
  return Status::FailedPrecondition(path + ": not a slurmsweep database (schema version 0)");
}

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

}  // namespace sweep::store
