// SqliteStore (sqlite_store.h): opening a database, studies, trials, events and the controller's lease.
// store/ is the only module that includes sqlite3.h: all SQL is a named constant in sql.h, prepared once per
// connection; the schema's numbered migrations are migrations.cc's; the plumbing, sqlite_db.h's.
#include "store/sqlite_store.h"
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

#include "store/migrations.h"
#include "store/sql.h"

namespace sweep::store {
namespace {

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

}  // namespace

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
  SWEEP_RETURN_IF_ERROR(
      ExecScript(raw, path, read_only ? kSqlReaderCache : kSqlWriterCache, "configure the connection's cache"));

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
      {&stmts_.events_after, kSqlEventsAfter},
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
      {&stmts_.study_buckets, kSqlStudyBuckets},
      {&stmts_.delete_buckets_of, kSqlDeleteBucketsOf},
      {&stmts_.delete_summaries, kSqlDeleteSummaries},
      {&stmts_.delete_buckets, kSqlDeleteBuckets},
  };
  auto prepare = [&](StmtPtr* slot, const char* sql) -> Status {
    sqlite3_stmt* raw = nullptr;
    // PERSISTENT: these live as long as the connection, so SQLite may allocate them accordingly.
    int rc = sqlite3_prepare_v3(db_.get(), sql, -1, SQLITE_PREPARE_PERSISTENT, &raw, nullptr);
    slot->reset(raw);
    if (rc != SQLITE_OK) return SqliteError(db_.get(), path_, std::string("prepare \"") + sql + "\"", rc);
    return Status::OK();
  };
  for (const auto& [slot, sql] : all) SWEEP_RETURN_IF_ERROR(prepare(slot, sql));
  // The statements of many rows: one VALUES tuple a row.
  auto many = [](const char* begin, const char* row, int n, const char* end) {
    std::string sql = begin;
    for (int i = 0; i < n; ++i) (sql += i ? ", " : "") += row;
    return sql + end;
  };
  SWEEP_RETURN_IF_ERROR(
      prepare(&stmts_.insert_metrics,
              many(kSqlInsertMetricsBegin, kSqlInsertMetricsRow, kRowsPerInsert, kSqlInsertMetricsEnd).c_str()));
  return prepare(&stmts_.write_summaries,
                 many(kSqlWriteSummariesBegin, kSqlWriteSummariesRow, kSummariesPerWrite, "").c_str());
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

namespace {

// The rows of an events query: id, trial_id, at, kind, message.
Result<std::vector<EventRecord>> ReadEvents(Query& q) {
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

}  // namespace

Result<std::vector<EventRecord>> SqliteStore::Events(int64_t study_id) {
  Query q = Use(stmts_.events, "read events of study " + std::to_string(study_id));
  q.BindInt(1, study_id);
  return ReadEvents(q);
}

Result<std::vector<EventRecord>> SqliteStore::EventsAfter(int64_t study_id, const std::string& kind, int64_t after_id) {
  Query q = Use(stmts_.events_after, "read " + kind + " events of study " + std::to_string(study_id));
  q.BindInt(1, study_id);
  q.BindText(2, kind);
  q.BindInt(3, after_id);
  return ReadEvents(q);
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

bool IsDatabaseBusy(const Status& s) { return s.cause() == Status::Cause::kDatabaseBusy; }

Result<std::unique_ptr<Store>> Store::Open(const std::string& path) { return SqliteStore::Create(path, false); }

Result<std::unique_ptr<Store>> Store::OpenReadOnly(const std::string& path) { return SqliteStore::Create(path, true); }

}  // namespace sweep::store
