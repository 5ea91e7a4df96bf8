// Tests of the SQLite Store: schema versioning, the rerun and replay guarantees the orchestrator
// relies on, transactions, and a reader beside a writer. Raw sqlite3 calls stand in for "another
// process" or "another version of slurmsweep".
#include "store/store.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <random>
#include <string>

#include "tests/test_util.h"

namespace sweep::store {
namespace {

using sweep::testing::TempDir;

std::unique_ptr<Store> MustOpen(const std::string& path) {
  auto store = Store::Open(path);
  INFO(store.status().ToString());
  REQUIRE(store.ok());
  return std::move(store).value();
}

// A second connection, as another process would have.
class RawDb {
 public:
  explicit RawDb(const std::string& path) { REQUIRE(sqlite3_open(path.c_str(), &db_) == SQLITE_OK); }
  ~RawDb() { sqlite3_close(db_); }
  void Exec(const std::string& sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
    INFO(sql << ": " << (err ? err : ""));
    sqlite3_free(err);
    REQUIRE(rc == SQLITE_OK);
  }
  std::string Text(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    REQUIRE(sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK);
    REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
    const unsigned char* text = sqlite3_column_text(stmt, 0);
    std::string out = text ? reinterpret_cast<const char*>(text) : "";
    sqlite3_finalize(stmt);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

TrialRecord NewTrial(const std::string& key) {
  TrialRecord t;
  t.trial_key = key;
  t.params_json = R"({"lr":0.01})";
  t.state = "new";
  return t;
}

// A study with trials "a" and "b"; returns the study id.
int64_t Seed(Store& store, std::vector<TrialRecord>* trials = nullptr) {
  auto study = store.UpsertStudy("sweep1", "/home/u/sweep1.toml", "hash1", 1000.0);
  REQUIRE(study.ok());
  std::vector<TrialRecord> ts = {NewTrial("a"), NewTrial("b")};
  REQUIRE(store.InsertTrialsIfAbsent(*study, ts).ok());
  if (trials) *trials = ts;
  return *study;
}

TEST_CASE("Store: a new database gets the current schema version and WAL", "[store]") {
  TempDir dir;
  std::string path = dir.file("study.db");
  MustOpen(path);
  REQUIRE(SchemaVersion() >= 1);
  RawDb raw(path);
  CHECK(raw.Text("PRAGMA user_version") == std::to_string(SchemaVersion()));
  CHECK(raw.Text("PRAGMA journal_mode") == "wal");
}

TEST_CASE("Store: the database file and its WAL are private to the user", "[store]") {
  TempDir dir;
  std::string path = dir.file("study.db");
  // Even with a permissive umask.
  mode_t old_umask = ::umask(0);
  auto store = Store::Open(path);
  ::umask(old_umask);
  REQUIRE(store.ok());
  REQUIRE((*store)->UpsertStudy("s", "p", "h", 1.0).ok());  // makes SQLite create -wal

  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
  REQUIRE(::stat((path + "-wal").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0600);
}

TEST_CASE("Store: reopening keeps the data", "[store]") {
  TempDir dir;
  std::string path = dir.file("study.db");
  int64_t study_id;
  {
    auto store = MustOpen(path);
    study_id = Seed(*store);
    REQUIRE(store->AddEvent(study_id, std::nullopt, 5.0, "start", "run started").ok());
  }
  auto store = MustOpen(path);
  auto study = store->GetStudy("sweep1");
  REQUIRE(study.ok());
  CHECK(study->id == study_id);
  CHECK(study->spec_path == "/home/u/sweep1.toml");
  CHECK(study->spec_hash == "hash1");
  CHECK(study->created_at == 1000.0);
  auto trials = store->ListTrials(study_id);
  REQUIRE(trials.ok());
  REQUIRE(trials->size() == 2);
  CHECK((*trials)[0].trial_key == "a");
  CHECK((*trials)[1].trial_key == "b");
  CHECK(store->Events(study_id)->size() == 1);
}

TEST_CASE("Store: UpsertStudy keeps the id and creation time, updates the spec", "[store]") {
  TempDir dir;
  auto store = MustOpen(dir.file("study.db"));
  auto first = store->UpsertStudy("s", "/a.toml", "h1", 10.0);
  auto second = store->UpsertStudy("s", "/b.toml", "h2", 20.0);
  auto other = store->UpsertStudy("t", "/c.toml", "h3", 30.0);
  REQUIRE(first.ok());
  REQUIRE(second.ok());
  REQUIRE(other.ok());
  CHECK(*first == *second);
  CHECK(*other != *first);
  auto study = store->GetStudy("s");
  REQUIRE(study.ok());
  CHECK(study->spec_path == "/b.toml");
  CHECK(study->spec_hash == "h2");
  CHECK(study->created_at == 10.0);
  CHECK(store->GetStudy("nope").status().IsNotFound());
}

TEST_CASE("Store: InsertTrialsIfAbsent never resets an existing trial", "[store]") {
  TempDir dir;
  auto store = MustOpen(dir.file("study.db"));
  std::vector<TrialRecord> first;
  int64_t study_id = Seed(*store, &first);
  REQUIRE(first[0].id != 0);
  CHECK(first[0].id != first[1].id);
  CHECK(first[0].study_id == study_id);

  TrialRecord running = first[0];
  running.state = "running";
  running.job_id = "1234";
  REQUIRE(store->UpdateTrial(running).ok());

  // A rerun of the same study file offers the same trials again, fresh, plus a new one.
  std::vector<TrialRecord> again = {NewTrial("a"), NewTrial("b"), NewTrial("c")};
  again[0].params_json = R"({"lr":0.5})";
  REQUIRE(store->InsertTrialsIfAbsent(study_id, again).ok());
  CHECK(again[0].id == first[0].id);
  CHECK(again[1].id == first[1].id);
  CHECK(again[2].id != 0);

  auto a = store->GetTrial(first[0].id);
  REQUIRE(a.ok());
  CHECK(a->state == "running");
  CHECK(a->job_id == "1234");
  CHECK(a->params_json == R"({"lr":0.01})");
  CHECK(store->ListTrials(study_id)->size() == 3);
}

TEST_CASE("Store: InsertTrialsIfAbsent into a missing study fails without side effects", "[store]") {
  TempDir dir;
  auto store = MustOpen(dir.file("study.db"));
  std::vector<TrialRecord> trials = {NewTrial("a")};
  Status s = store->InsertTrialsIfAbsent(42, trials);
  CHECK(s.IsNotFound());
  CHECK(trials[0].id == 0);
  CHECK(store->ListTrials(42)->empty());
}

TEST_CASE("Store: UpdateTrial round-trips every mutable field but not the offset", "[store]") {
  TempDir dir;
  auto store = MustOpen(dir.file("study.db"));
  std::vector<TrialRecord> trials;
  Seed(*store, &trials);
  REQUIRE(store->AppendMetrics(trials[0].id, {}, 77).ok());

  TrialRecord t = trials[0];
  t.state = "failed";
  t.reason = "exit code 42";
  t.job_id = "98765_3";
  t.slurm_state = "CANCELLED by 0";
  t.exit_code = "42:0";
  t.attempt = 3;
  t.submitted_at = 1700000000.25;
  t.started_at = 1700000100.5;
  t.ended_at = 1700000200.75;
  t.log_path = "/scratch/u/sweep1/a/slurm-98765_3.out";
  t.stop_request = "pruned: median rule";
  t.array_name = "ss-quick-arr1-1";
  t.array_index = 3;
  t.log_offset = 999999;  // must be ignored
  REQUIRE(store->UpdateTrial(t).ok());

  auto got = store->GetTrial(t.id);
  REQUIRE(got.ok());
  CHECK(got->trial_key == "a");
  CHECK(got->params_json == t.params_json);
  CHECK(got->state == "failed");
  CHECK(got->reason == "exit code 42");
  CHECK(got->job_id == "98765_3");
  CHECK(got->slurm_state == "CANCELLED by 0");
  CHECK(got->exit_code == "42:0");
  CHECK(got->attempt == 3);
  CHECK(got->submitted_at == 1700000000.25);
  CHECK(got->started_at == 1700000100.5);
  CHECK(got->ended_at == 1700000200.75);
  CHECK(got->stop_request == "pruned: median rule");
  CHECK(got->array_name == "ss-quick-arr1-1");
  CHECK(got->array_index == 3);
  CHECK(got->log_path == t.log_path);
  CHECK(got->log_offset == 77);

  // A requeue clears the times again.
  t.state = "pending";
  t.submitted_at.reset();
  t.started_at.reset();
  t.ended_at.reset();
  t.reason.clear();
  REQUIRE(store->UpdateTrial(t).ok());
  got = store->GetTrial(t.id);
  REQUIRE(got.ok());
  CHECK(got->state == "pending");
  CHECK(got->reason.empty());
  CHECK_FALSE(got->submitted_at.has_value());
  CHECK_FALSE(got->started_at.has_value());
  CHECK_FALSE(got->ended_at.has_value());

  // Writing the same values again is not "not found".
  CHECK(store->UpdateTrial(t).ok());

  TrialRecord missing = t;
  missing.id = 123456;
  CHECK(store->UpdateTrial(missing).IsNotFound());
  CHECK(store->GetTrial(123456).status().IsNotFound());
}

TEST_CASE("Store: telemetry rows move their own offset, once, and stay out of the step count", "[store]") {
  TempDir dir;
  auto store = MustOpen(dir.file("study.db"));
  std::vector<TrialRecord> trials;
  Seed(*store, &trials);
  int64_t id = trials[0].id;
  REQUIRE(store->AppendMetrics(id, {{40, 12.0, "lm_loss", 2.5}}, 300).ok());
  std::vector<MetricRow> samples = {{1764790000, 1764790000, "system/node/mem_used_gib", 3.5},
                                    {1764790010, 1764790010, "system/node/mem_used_gib", 3.75}};
  REQUIRE(store->AppendTelemetry(id, samples, 120).ok());
  REQUIRE(store->AppendTelemetry(id, samples, 120).ok());  // the same bytes read again
  CHECK(*store->CountMetrics(id) == 3);
  auto t = store->GetTrial(id);
  CHECK(t->log_offset == 300);
  CHECK(t->telemetry_offset == 120);
  auto summary = store->Summary(id);
  REQUIRE(summary.ok());
  CHECK(summary->max_step() == 40);  // not the samples' Unix seconds
  CHECK(summary->max_time_s() == 12.0);
  CHECK(summary->Find("system/node/mem_used_gib")->points == 2);
  // A retry from scratch starts both files over.
  REQUIRE(store->ResetMetrics(id).ok());
  t = store->GetTrial(id);
  CHECK(t->log_offset == 0);
  CHECK(t->telemetry_offset == 0);
  CHECK(*store->CountMetrics(id) == 0);
  CHECK(store->AppendTelemetry(987654, samples, 1).IsNotFound());
}

TEST_CASE("Store: AppendMetrics is idempotent for replayed rows and moves the offset", "[store]") {
  TempDir dir;
  auto store = MustOpen(dir.file("study.db"));
  std::vector<TrialRecord> trials;
  Seed(*store, &trials);
  int64_t id = trials[0].id;

  std::vector<MetricRow> chunk1 = {{1, 0.5, "lm_loss", 2.5}, {1, 0.5, "iter_time_ms", 500}, {2, 1.0, "lm_loss", 2.25}};
  std::vector<MetricRow> chunk2 = {{2, 1.0, "lm_loss", 2.25}, {3, 1.5, "lm_loss", 2.0}};
  REQUIRE(store->AppendMetrics(id, chunk1, 100).ok());
  CHECK(*store->CountMetrics(id) == 3);
  CHECK(store->GetTrial(id)->log_offset == 100);

  // A crash after the commit but before the caller noticed: the same bytes are read again.
  REQUIRE(store->AppendMetrics(id, chunk1, 100).ok());
  CHECK(*store->CountMetrics(id) == 3);
  // Overlapping chunk: only the new row lands.
  REQUIRE(store->AppendMetrics(id, chunk2, 180).ok());
  CHECK(*store->CountMetrics(id) == 4);
  CHECK(store->GetTrial(id)->log_offset == 180);
  CHECK(*store->CountMetrics(trials[1].id) == 0);

  auto rows = store->Metrics(id);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 4);
  // Ordered by (name, step).
  CHECK((*rows)[0].name == "iter_time_ms");
  CHECK((*rows)[1].name == "lm_loss");
  CHECK((*rows)[1].step == 1);
  CHECK((*rows)[3].step == 3);
  CHECK((*rows)[3].time_s == 1.5);
  CHECK((*rows)[3].value == 2.0);

  auto series = store->MetricSeries(id, "lm_loss");
  REQUIRE(series.ok());
  REQUIRE(series->size() == 3);
  CHECK((*series)[0].step == 1);
  CHECK((*series)[2].step == 3);
  CHECK((*series)[2].value == 2.0);
  CHECK(store->MetricSeries(id, "grad_norm")->empty());

  auto last = store->LastMetric(id, "lm_loss");
  REQUIRE(last.ok());
  REQUIRE(last->has_value());
  CHECK((*last)->step == 3);
  CHECK((*last)->value == 2.0);
  auto none = store->LastMetric(id, "grad_norm");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());

  CHECK(store->AppendMetrics(424242, chunk1, 10).IsNotFound());
}

TEST_CASE("Store: ResetMetrics clears one trial's curve and offset for a fresh retry", "[store]") {
  TempDir dir;
  auto store = MustOpen(dir.file("study.db"));
  std::vector<TrialRecord> trials;
  Seed(*store, &trials);
  REQUIRE(store->AppendMetrics(trials[0].id, {{1, 0.5, "lm_loss", 2.5}, {2, 1.0, "lm_loss", 2.4}}, 300).ok());
  REQUIRE(store->AppendMetrics(trials[1].id, {{1, 0.5, "lm_loss", 3.5}}, 50).ok());
  REQUIRE(store->ResetMetrics(trials[0].id).ok());
  CHECK(*store->CountMetrics(trials[0].id) == 0);
  CHECK(store->GetTrial(trials[0].id)->log_offset == 0);
  CHECK(*store->CountMetrics(trials[1].id) == 1);  // other trials untouched
  CHECK(store->GetTrial(trials[1].id)->log_offset == 50);
  CHECK(store->ResetMetrics(424242).IsNotFound());
}

TEST_CASE("Store: a diverged run's NaN and inf values are kept", "[store]") {
  TempDir dir;
  auto store = MustOpen(dir.file("study.db"));
  std::vector<TrialRecord> trials;
  Seed(*store, &trials);
  double inf = std::numeric_limits<double>::infinity();
  REQUIRE(store->AppendMetrics(trials[0].id, {{1, 0.5, "lm_loss", std::nan("")}, {2, 1.0, "lm_loss", inf}}, 50).ok());
  auto rows = store->Metrics(trials[0].id);
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 2);
  CHECK(std::isnan((*rows)[0].value));
  CHECK((*rows)[1].value == inf);
}

TEST_CASE("Store: a failed transaction rolls back rows and offset", "[store]") {
  TempDir dir;
  auto store = MustOpen(dir.file("study.db"));
  std::vector<TrialRecord> trials;
  int64_t study_id = Seed(*store, &trials);
  int64_t id = trials[0].id;
  REQUIRE(store->AppendMetrics(id, {{1, 0.5, "lm_loss", 2.5}}, 40).ok());

  SECTION("fn returns an error") {
    Status s = store->InTransaction([&]() -> Status {
      SWEEP_RETURN_IF_ERROR(store->AppendMetrics(id, {{2, 1.0, "lm_loss", 2.0}}, 90));
      SWEEP_RETURN_IF_ERROR(store->AddEvent(study_id, id, 7.0, "ingest", "read 50 bytes"));
      return Status::IOError("disk full while writing the report");
    });
    CHECK(s.code() == Status::Code::kIOError);
  }
  SECTION("a nested step fails and the outer fn ignores it") {
    Status s = store->InTransaction([&]() -> Status {
      SWEEP_RETURN_IF_ERROR(store->AppendMetrics(id, {{2, 1.0, "lm_loss", 2.0}}, 90));
      Status ignored = store->AppendMetrics(999, {}, 1);  // no such trial
      CHECK(ignored.IsNotFound());
      return Status::OK();
    });
    CHECK(s.IsNotFound());
    CHECK(s.message().find("rolled back") != std::string::npos);
  }
  SECTION("fn throws") {
    CHECK_THROWS(store->InTransaction([&]() -> Status {
      REQUIRE(store->AppendMetrics(id, {{2, 1.0, "lm_loss", 2.0}}, 90).ok());
      throw std::runtime_error("boom");
    }));
  }

  CHECK(*store->CountMetrics(id) == 1);
  CHECK(store->GetTrial(id)->log_offset == 40);
  CHECK(store->Events(study_id)->empty());
  // No transaction was left open: the next one commits.
  REQUIRE(store->InTransaction([&]() { return store->AppendMetrics(id, {{2, 1.0, "lm_loss", 2.0}}, 90); }).ok());
  auto reopened = MustOpen(dir.file("study.db"));
  CHECK(*reopened->CountMetrics(id) == 2);
  CHECK(reopened->GetTrial(id)->log_offset == 90);
}

// A study database written by the first release (schema 1, before job arrays), as its migration
// created it: opening it with this binary keeps every trial and adds the array columns.
TEST_CASE("Store: a schema-1 database is migrated in place and keeps its trials", "[store]") {
  TempDir dir;
  std::string path = dir.file("old.db");
  {
    RawDb raw(path);
    raw.Exec(R"sql(
CREATE TABLE studies (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, spec_path TEXT NOT NULL,
  spec_hash TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE trials (id INTEGER PRIMARY KEY, study_id INTEGER NOT NULL REFERENCES studies(id),
  trial_key TEXT NOT NULL, params_json TEXT NOT NULL, state TEXT NOT NULL, reason TEXT NOT NULL DEFAULT '',
  job_id TEXT NOT NULL DEFAULT '', slurm_state TEXT NOT NULL DEFAULT '', exit_code TEXT NOT NULL DEFAULT '',
  attempt INTEGER NOT NULL DEFAULT 0, submitted_at REAL, started_at REAL, ended_at REAL,
  log_path TEXT NOT NULL DEFAULT '', log_offset INTEGER NOT NULL DEFAULT 0,
  stop_request TEXT NOT NULL DEFAULT '', UNIQUE (study_id, trial_key));
CREATE TABLE metrics (trial_id INTEGER NOT NULL REFERENCES trials(id), step INTEGER NOT NULL, time_s REAL,
  name TEXT NOT NULL, value REAL, PRIMARY KEY (trial_id, name, step)) WITHOUT ROWID;
CREATE TABLE events (id INTEGER PRIMARY KEY, study_id INTEGER NOT NULL REFERENCES studies(id),
  trial_id INTEGER REFERENCES trials(id), at REAL NOT NULL, kind TEXT NOT NULL, message TEXT NOT NULL);
CREATE INDEX events_by_study ON events (study_id, id);
INSERT INTO studies VALUES (1, 'old', 'old.toml', 'h', 1.0);
INSERT INTO trials (id, study_id, trial_key, params_json, state, job_id, attempt, log_offset)
  VALUES (1, 1, 't-1', '{"lr":0.1,"mbs":8,"opt":"adam","scale":1.0}', 'running', '4242', 1, 640);
INSERT INTO metrics VALUES (1, 10, 1.5, 'lm_loss', 2.5);
INSERT INTO metrics VALUES (1, 20, 3.0, 'lm_loss', 2.25);
INSERT INTO metrics VALUES (1, 10, 1.5, 'grad_norm', 7.0);
PRAGMA user_version = 1;
)sql");
  }
  auto store = MustOpen(path);
  auto t = store->GetTrial(1);
  REQUIRE(t.ok());
  CHECK(t->state == "running");
  CHECK(t->job_id == "4242");
  CHECK(t->log_offset == 640);
  // Its values read back typed, each with the text the first release stored ("1.0" stays).
  CHECK(t->Values({"opt", "scale", "mbs", "none"}) ==
        Params{{"opt", std::string("adam")}, {"scale", 1.0}, {"mbs", int64_t{8}}});
  std::vector<std::string> shown;
  for (const ParamCell& c : t->Cells({"lr", "mbs", "opt", "scale", "none"})) shown.push_back(c.text);
  CHECK(shown == std::vector<std::string>{"0.1", "8", "adam", "1.0", ""});
  CHECK(t->HoldsValues(R"({"mbs":"8","scale":1})"));
  CHECK_FALSE(t->HoldsValues(R"({"mbs":16})"));
  CHECK(t->array_name.empty());
  CHECK(t->array_index == -1);
  CHECK(t->prior_run_s == 0);  // migration 4: no earlier attempt recorded
  CHECK(store->CountMetrics(1).value() == 3);
  // The metrics moved to numbered names (migration 3) read back as they were stored.
  auto loss = store->MetricSeries(1, "lm_loss");
  REQUIRE(loss.ok());
  REQUIRE(loss->size() == 2);
  CHECK((*loss)[1].step == 20);
  CHECK((*loss)[1].value == 2.25);
  CHECK((*loss)[1].name == "lm_loss");
  auto all = store->Metrics(1);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 3);
  CHECK((*all)[0].name == "grad_norm");  // by name, then step
  // A replay of a migrated row is still dropped, and a new name joins the old ones.
  REQUIRE(store->AppendMetrics(1, {{20, 3.0, "lm_loss", 9.0}, {20, 3.0, "grad_norm", 6.0}}, 700).ok());
  CHECK(store->CountMetrics(1).value() == 4);
  CHECK(store->LastMetric(1, "lm_loss").value()->value == 2.25);
  CHECK(store->LastMetric(1, "grad_norm").value()->value == 6.0);
  CHECK(RawDb(path).Text("PRAGMA user_version") == std::to_string(SchemaVersion()));
}

// Metric names are numbered on first use inside the ingesting transaction; if that transaction
// rolls back, the number is gone with it and must not be reused from memory.
TEST_CASE("Store: a metric name first seen in a rolled-back transaction can be stored later", "[store]") {
  TempDir dir;
  auto store = MustOpen(dir.file("study.db"));
  auto study = store->UpsertStudy("s", "s.toml", "h", 1.0);
  REQUIRE(study.ok());
  std::vector<TrialRecord> ts = {NewTrial("a")};
  REQUIRE(store->InsertTrialsIfAbsent(*study, ts).ok());
  std::optional<int64_t> trial = ts[0].id;
  Status failed = store->InTransaction([&]() -> Status {
    SWEEP_RETURN_IF_ERROR(store->AppendMetrics(*trial, {{1, 0.5, "new_metric", 1.0}}, 10));
    return Status::Internal("the tick failed after ingesting");
  });
  CHECK_FALSE(failed.ok());
  CHECK(store->CountMetrics(*trial).value() == 0);
  Status again = store->AppendMetrics(*trial, {{1, 0.5, "new_metric", 1.0}}, 10);
  INFO(again.ToString());
  REQUIRE(again.ok());
  CHECK(store->MetricSeries(*trial, "new_metric").value().size() == 1);
}

TEST_CASE("Store: a database from a newer slurmsweep is refused", "[store]") {
  TempDir dir;
  std::string path = dir.file("study.db");
  MustOpen(path);
  RawDb(path).Exec("PRAGMA user_version = 999");

  for (bool read_only : {false, true}) {
    auto store = read_only ? Store::OpenReadOnly(path) : Store::Open(path);
    REQUIRE_FALSE(store.ok());
    CHECK(store.status().code() == Status::Code::kFailedPrecondition);
    const std::string& msg = store.status().message();
    INFO(msg);
    CHECK(msg.find(path) != std::string::npos);
    CHECK(msg.find("999") != std::string::npos);
    CHECK(msg.find("(" + std::to_string(SchemaVersion()) + ")") != std::string::npos);
  }
  // Refusing must not have touched it.
  CHECK(RawDb(path).Text("PRAGMA user_version") == "999");
}

TEST_CASE("Store: other files are not taken for study databases", "[store]") {
  TempDir dir;
  SECTION("another program's SQLite database") {
    std::string path = dir.file("other.db");
    RawDb(path).Exec("CREATE TABLE t (x)");
    auto store = Store::Open(path);
    CHECK(store.status().code() == Status::Code::kFailedPrecondition);
    CHECK(store.status().message().find("not a slurmsweep database") != std::string::npos);
    CHECK(Store::OpenReadOnly(path).status().code() == Status::Code::kFailedPrecondition);
  }
  SECTION("an empty file is a new database when writing, but not when reading") {
    std::string path = dir.file("empty.db");
    sweep::testing::WriteAll(path, "");
    CHECK(Store::OpenReadOnly(path).status().code() == Status::Code::kFailedPrecondition);
    CHECK(Store::Open(path).ok());
  }
  SECTION("a text file") {
    std::string path = dir.file("notes.txt");
    sweep::testing::WriteAll(path, std::string(4096, 'x'));
    auto store = Store::Open(path);
    CHECK(store.status().code() == Status::Code::kIOError);
    CHECK(store.status().message().find(path) != std::string::npos);
  }
  SECTION("no file at all, read-only") {
    auto store = Store::OpenReadOnly(dir.file("missing.db"));
    CHECK(store.status().IsNotFound());
    CHECK_FALSE(std::filesystem::exists(dir.file("missing.db")));
  }
  SECTION("a directory that does not exist") {
    auto store = Store::Open(dir.file("no/such/dir/study.db"));
    CHECK(store.status().code() == Status::Code::kIOError);
  }
}

TEST_CASE("Store: a reader sees a concurrent writer's commits", "[store]") {
  TempDir dir;
  std::string path = dir.file("study.db");
  auto writer = MustOpen(path);
  std::vector<TrialRecord> trials;
  int64_t study_id = Seed(*writer, &trials);

  auto reader_or = Store::OpenReadOnly(path);
  INFO(reader_or.status().ToString());
  REQUIRE(reader_or.ok());
  auto& reader = *reader_or;
  CHECK(reader->ListTrials(study_id)->size() == 2);
  CHECK(*reader->CountMetrics(trials[0].id) == 0);

  REQUIRE(writer->AppendMetrics(trials[0].id, {{1, 0.5, "lm_loss", 2.5}}, 30).ok());
  CHECK(*reader->CountMetrics(trials[0].id) == 1);
  CHECK(reader->GetTrial(trials[0].id)->log_offset == 30);

  // An open write transaction is invisible until it commits, and does not block the reader.
  REQUIRE(writer
              ->InTransaction([&]() -> Status {
                SWEEP_RETURN_IF_ERROR(writer->AppendMetrics(trials[0].id, {{2, 1.0, "lm_loss", 2.0}}, 60));
                CHECK(*reader->CountMetrics(trials[0].id) == 1);
                return Status::OK();
              })
              .ok());
  CHECK(*reader->CountMetrics(trials[0].id) == 2);

  // The reader cannot write.
  Status s = reader->AddEvent(study_id, std::nullopt, 1.0, "x", "y");
  CHECK(s.code() == Status::Code::kFailedPrecondition);
  CHECK(reader->InTransaction([] { return Status::OK(); }).code() == Status::Code::kFailedPrecondition);
}

TEST_CASE("Store: a reader opens a database whose writer has exited", "[store]") {
  TempDir dir;
  std::string path = dir.file("study.db");
  int64_t study_id;
  {
    auto writer = MustOpen(path);
    study_id = Seed(*writer);
  }
  auto reader = Store::OpenReadOnly(path);
  INFO(reader.status().ToString());
  REQUIRE(reader.ok());
  CHECK((*reader)->ListTrials(study_id)->size() == 2);
}

TEST_CASE("Store: events round-trip in order", "[store]") {
  TempDir dir;
  auto store = MustOpen(dir.file("study.db"));
  std::vector<TrialRecord> trials;
  int64_t study_id = Seed(*store, &trials);
  int64_t other_study = *store->UpsertStudy("other", "/o.toml", "h", 2.0);
  REQUIRE(store->AddEvent(study_id, std::nullopt, 10.5, "run_start", "3 trials to submit").ok());
  REQUIRE(store->AddEvent(study_id, trials[1].id, 11.25, "submitted", "job 1234").ok());
  REQUIRE(store->AddEvent(other_study, std::nullopt, 12.0, "run_start", "other").ok());

  auto events = store->Events(study_id);
  REQUIRE(events.ok());
  REQUIRE(events->size() == 2);
  CHECK((*events)[0].id < (*events)[1].id);
  CHECK_FALSE((*events)[0].trial_id.has_value());
  CHECK((*events)[0].at == 10.5);
  CHECK((*events)[0].kind == "run_start");
  CHECK((*events)[0].message == "3 trials to submit");
  CHECK((*events)[1].trial_id == trials[1].id);
  CHECK((*events)[1].kind == "submitted");
  CHECK((*events)[1].message == "job 1234");

  // Foreign keys are on: an event cannot name a trial that does not exist.
  CHECK(store->AddEvent(study_id, 999, 1.0, "x", "y").IsNotFound());
}

TEST_CASE("Store: a lock held past the busy timeout is kUnavailable, not an error", "[store]") {
  TempDir dir;
  std::string path = dir.file("study.db");
  auto store = MustOpen(path);
  std::vector<TrialRecord> trials;
  int64_t study_id = Seed(*store, &trials);
  {
    RawDb other(path);
    other.Exec("BEGIN IMMEDIATE");
    // Waits out busy_timeout (5 s).
    Status s = store->InTransaction([&] { return store->AppendMetrics(trials[0].id, {{1, 0.5, "lm_loss", 1}}, 9); });
    CHECK(s.IsUnavailable());
    CHECK(s.message().find(path) != std::string::npos);
    CHECK(IsDatabaseBusy(s));  // so the run loop says "database busy", not "cluster unreachable"
    CHECK(IsDatabaseBusy(s.WithContext("tick 7")));
    CHECK_FALSE(IsDatabaseBusy(Status::Unavailable("ssh: connection refused")));
    // The cause, not the words: a message that merely ends like the lock's note is not busy.
    CHECK_FALSE(IsDatabaseBusy(Status::Unavailable("ssh: (another process holds the database lock)")));
    other.Exec("ROLLBACK");
  }
  REQUIRE(store->AppendMetrics(trials[0].id, {{1, 0.5, "lm_loss", 1}}, 9).ok());
  REQUIRE(store->AddEvent(study_id, std::nullopt, 1.0, "retry", "worked").ok());
  CHECK(*store->CountMetrics(trials[0].id) == 1);
}

}  // namespace
TEST_CASE("Store: MetricCurves reads each named metric as MetricSeries does, on random rows", "[store]") {
  TempDir dir;
  auto store = MustOpen(dir.file("study.db"));
  std::vector<TrialRecord> trials;
  Seed(*store, &trials);
  std::mt19937 rng(42);
  const std::vector<std::string> logged = {"lm_loss", "nan_iters", "grad_norm", "lr"};
  for (int round = 0; round < 20; ++round) {
    // Rows in random order across steps and metrics, some NaN, some steps missing a metric, some
    // rows replayed; the other trial's rows must not leak in.
    for (const TrialRecord& t : trials) {
      std::vector<MetricRow> rows;
      for (int k = 0; k < 30; ++k) {
        int64_t step = std::uniform_int_distribution<int64_t>(0, 400)(rng);
        const std::string& name = logged[rng() % logged.size()];
        double value = rng() % 9 == 0 ? std::nan("") : std::uniform_real_distribution<double>(0, 5)(rng);
        rows.push_back({step, 0.5 * static_cast<double>(step), name, value});
      }
      REQUIRE(store->AppendMetrics(t.id, rows, 10 * (round + 1)).ok());
    }
    for (const TrialRecord& t : trials) {
      const std::vector<std::string> names = {"nan_iters", "never_logged", "lm_loss", "lr"};
      auto curves = store->MetricCurves(t.id, names);
      REQUIRE(curves.ok());
      REQUIRE(curves->size() == names.size());
      for (size_t k = 0; k < names.size(); ++k) {
        auto series = store->MetricSeries(t.id, names[k]);
        REQUIRE(series.ok());
        const auto& got = (*curves)[k];
        REQUIRE(got.size() == series->size());
        for (size_t i = 0; i < got.size(); ++i) {
          INFO(names[k] << " point " << i);
          CHECK(got[i].step == (*series)[i].step);
          CHECK(got[i].time_s == (*series)[i].time_s);
          CHECK((got[i].value == (*series)[i].value || (std::isnan(got[i].value) && std::isnan((*series)[i].value))));
        }
      }
    }
  }
}

}  // namespace sweep::store
