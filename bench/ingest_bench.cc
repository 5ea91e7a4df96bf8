// ingest_bench: how fast metric points get from Megatron-LM log text into the study database, in
// one run and on the same rows in the same order: ours (ParseMetrics + Store::AppendMetricsMany, one
// call per tick for every trial's rows as Ingester::IngestAll makes it), the limit (the already-parsed rows bulk
// inserted with the raw sqlite3 API into the same schema), and Optuna 3.1's trial.report on its
// SQLite storage (bench/optuna_storage.py). Not a test: it prints.
//
//   build/bin/ingest_bench [--lines N] [--trials N] [--lines-per-tick N] [--rounds N] [--optuna-points N]
//                          [--no-optuna] [--per-trial]
//
// The logs are synthetic but printed as Megatron-LM prints them (training.py's training_log, with
// --log-throughput): every line holds ten metrics, so a line stores ten rows. The trials log side
// by side, as in a sweep: each tick, every live trial has logged a few more lines. Databases go to
// a fresh directory under $TMPDIR (or /tmp), removed at the end; TMPDIR=/dev/shm takes the disk
// out of the comparison.

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <numbers>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "base/filesystem.h"
#include "logs/metrics_parser.h"
#include "run/lease.h"
#include "store/store.h"

namespace sweep {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

constexpr int kLogInterval = 10;           // Megatron's --log-interval: steps between two lines
constexpr int64_t kRawRowsPerTxn = 10000;  // the limit's transactions
constexpr int kRounds = 3;                 // paired rounds (--rounds): the median of their ratios counts

double Seconds(Clock::time_point since) { return std::chrono::duration<double>(Clock::now() - since).count(); }

// CPU time of the calling thread. Ours and the limit are timed in it: both run in this thread and
// SQLite starts no thread of its own, so it counts their work (user and system, the page cache's
// copies included) and not the time other processes on a shared machine held the cores. Wall time
// is printed beside it.
double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

[[noreturn]] void Fail(const std::string& what) {
  std::cerr << "ingest_bench: " << what << "\n";
  std::exit(1);
}

void Check(const Status& s, const std::string& what) {
  if (!s.ok()) Fail(what + ": " + s.ToString());
}

template <class T>
T Check(Result<T> r, const std::string& what) {
  if (!r.ok()) Fail(what + ": " + r.status().ToString());
  return std::move(*r);
}

// ---------------------------------------------------------------------------------------------
// The logs

struct Workload {
  int trials = 0;
  int64_t lines = 0;
  size_t bytes = 0;
  int64_t chunks = 0;  // non-empty (tick, trial) pairs: the AppendMetrics calls ours makes
  // ticks[k][i]: the lines trial i logged during tick k (empty once it has logged all of its).
  std::vector<std::vector<std::string>> ticks;
};

// " [2026-12-02 10:00:00]", as Megatron-LM prints the wall clock before each line.
void AppendTimestamp(std::string& out, int64_t unix_s) {
  using namespace std::chrono;
  sys_seconds t{seconds{unix_s}};
  sys_days day = floor<days>(t);
  year_month_day ymd{day};
  hh_mm_ss hms{t - day};
  fmt::format_to(std::back_inserter(out), " [{:04}-{:02}-{:02} {:02}:{:02}:{:02}]", static_cast<int>(ymd.year()),
                 static_cast<unsigned>(ymd.month()), static_cast<unsigned>(ymd.day()), hms.hours().count(),
                 hms.minutes().count(), hms.seconds().count());
}

// One trial's run: a model size and batch size fix its speed; warm-up then cosine learning rate;
// a loss that falls from ~10.8 towards a floor, with noise.
class TrialLog {
 public:
  TrialLog(int64_t lines, std::mt19937_64& seed) : rng_(seed()), total_lines_(lines) {
    std::uniform_real_distribution<double> u(0, 1);
    iter_ms_ = 250 + 600 * u(rng_);
    tflops_ = 120 + 300 * u(rng_);
    global_batch_ = 256 << static_cast<int>(3 * u(rng_));
    lr_peak_ = 1e-4 + 5e-4 * u(rng_);
    loss_floor_ = 1.8 + 1.2 * u(rng_);
    train_iters_ = lines * kLogInterval;
  }

  int64_t remaining() const { return total_lines_ - logged_; }

  void AppendLines(std::string& out, int64_t n) {
    std::normal_distribution<double> noise(0, 1);
    for (int64_t k = 0; k < n; ++k, ++logged_) {
      int64_t step = (logged_ + 1) * kLogInterval;
      double ms = iter_ms_ * (1 + 0.02 * noise(rng_));
      elapsed_s_ += ms * kLogInterval / 1000;
      double progress = static_cast<double>(step) / static_cast<double>(train_iters_);
      double cosine = 0.5 * (1 + std::cos(std::numbers::pi * (progress - 0.01) / 0.99));
      double lr = progress < 0.01 ? lr_peak_ * progress / 0.01 : lr_peak_ * (0.1 + 0.9 * cosine);
      double loss = loss_floor_ + (10.8 - loss_floor_) * std::exp(-static_cast<double>(step) / 2000.0);
      loss *= 1 + 0.01 * noise(rng_);
      double grad_norm = (0.4 + 4 * std::exp(-static_cast<double>(step) / 1000.0)) * (1 + 0.1 * std::abs(noise(rng_)));
      AppendTimestamp(out, kStart + static_cast<int64_t>(elapsed_s_));
      fmt::format_to(std::back_inserter(out),
                     " iteration {:8d}/{:8d} | consumed samples: {:12d} | elapsed time per iteration (ms): {:.1f} | "
                     "throughput per GPU (TFLOP/s/GPU): {:.1f} | learning rate: {:.6E} | global batch size: {:5d} | "
                     "lm loss: {:.6E} | loss scale: {:.1f} | grad norm: {:.3f} | number of skipped iterations: {:3d} | "
                     "number of nan iterations: {:3d} |\n",
                     step, train_iters_, step * global_batch_, ms, tflops_ * iter_ms_ / ms, lr, global_batch_, loss,
                     1.0, grad_norm, 0, 0);
    }
  }

 private:
  static constexpr int64_t kStart = 1796205600;  // 2026-12-02 10:00:00 UTC

  std::mt19937_64 rng_;
  int64_t total_lines_, logged_ = 0;
  double iter_ms_, tflops_, lr_peak_, loss_floor_;
  int64_t global_batch_, train_iters_;
  double elapsed_s_ = 0;
};

Workload MakeWorkload(int64_t lines, int trials, int lines_per_tick) {
  Workload w;
  w.trials = trials;
  w.lines = lines;
  std::mt19937_64 seed(20261202);
  std::vector<TrialLog> logs;
  for (int i = 0; i < trials; ++i) logs.emplace_back(lines / trials + (i < lines % trials ? 1 : 0), seed);
  for (bool more = true; more;) {
    more = false;
    std::vector<std::string>& tick = w.ticks.emplace_back(trials);
    for (int i = 0; i < trials; ++i) {
      int64_t n = std::min<int64_t>(lines_per_tick, logs[i].remaining());
      if (n == 0) continue;
      logs[i].AppendLines(tick[i], n);
      w.bytes += tick[i].size();
      ++w.chunks;
      more = more || logs[i].remaining() > 0;
    }
  }
  return w;
}

// ---------------------------------------------------------------------------------------------
// Parse alone; its rows are what the limit inserts.

struct RawRow {
  int trial = 0;  // index into the trial ids
  int name = 0;   // index into ParsedRows::names
  int64_t step = 0;
  double time_s = 0;
  double value = 0;
};

struct ParsedRows {
  std::vector<std::string> names;
  std::vector<RawRow> rows;  // in the order ours stores them
  double parse_s = 0;        // ParseMetrics calls only
};

ParsedRows ParseAlone(const Workload& w) {
  ParsedRows out;
  std::map<std::string, int, std::less<>> name_index;
  std::vector<logs::ParserState> states(w.trials);
  out.rows.reserve(static_cast<size_t>(w.lines) * 10);
  for (const auto& tick : w.ticks) {
    for (int i = 0; i < w.trials; ++i) {
      if (tick[i].empty()) continue;
      auto start = Clock::now();
      logs::ParseOutput parsed = logs::ParseMetrics(tick[i], MetricFormat::kMegatron, states[i]);
      out.parse_s += Seconds(start);
      if (parsed.consumed != tick[i].size() || parsed.malformed != 0) {
        Fail(fmt::format("the parser left {} of {} bytes, {} malformed line(s): the generated lines are off",
                         tick[i].size() - parsed.consumed, tick[i].size(), parsed.malformed));
      }
      for (const MetricPoint& p : parsed.points) {
        auto [it, added] = name_index.try_emplace(p.name, static_cast<int>(out.names.size()));
        if (added) out.names.push_back(p.name);
        out.rows.push_back({i, it->second, p.step, p.time_s, p.value});
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Ours

struct Ours {
  int64_t rows = 0;
  double seconds = 0, parse_s = 0, store_s = 0;  // CPU time of the thread
  double wall_s = 0;
  // The controller's lease (run/lease.h), renewed before every tick as Runner::Run does:
  // its wall time, part of `seconds` and `wall_s` too.
  double lease_wall_s = 0;
  int64_t renewals = 0;
  // The heartbeat's writes alone, timed apart after the run (the lease's timeout 120 s means a
  // write every 12 s, which a run of this bench may not reach).
  int64_t lease_writes = 0;
  double lease_write_s = 0;
};

// Opens the database as `slurmsweep run` does and adds one study and its trials. Not timed.
std::unique_ptr<store::Store> SetUpStore(const fs::path& db, int trials, std::vector<int64_t>* ids) {
  auto s = Check(store::Store::Open(db.string()), "open " + db.string());
  int64_t study = Check(s->UpsertStudy("ingest_bench", "ingest_bench.toml", "0", 0), "add study");
  std::vector<store::TrialRecord> records(trials);
  for (int i = 0; i < trials; ++i) {
    records[i].trial_key = fmt::format("trial-{:03}", i);
    records[i].params_json = fmt::format("{{\"lr\":{}}}", i);
    records[i].state = "running";
    records[i].log_path = fmt::format("/scratch/sweep/trial-{:03}/train.log", i);
  }
  Check(s->InsertTrialsIfAbsent(study, records), "add trials");
  for (const auto& r : records) ids->push_back(r.id);
  return s;
}

// What Ingester::IngestAll does with each chunk a trial's log grew by, minus reading it: every trial's rows of a
// tick in one Store::AppendMetricsMany, or with `per_trial` (--per-trial, as before issue 42) one AppendMetrics
// a trial.
Ours RunOurs(const Workload& w, store::Store& db, const std::vector<int64_t>& ids, bool per_trial) {
  Ours o;
  std::vector<logs::ParserState> states(w.trials);
  std::vector<int64_t> offsets(w.trials, 0);
  auto now = [] { return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count(); };
  auto lease = Check(run::Lease::Take(db, run::ControllerIdentity::OfThisProcess(), now(), 120), "take the lease");
  auto start = Clock::now();
  double cpu_start = ThreadCpuSeconds();
  for (const auto& tick : w.ticks) {
    auto renew_start = Clock::now();
    Check(lease.Renew(now()), "renew the lease");
    o.lease_wall_s += Seconds(renew_start);
    ++o.renewals;
    // Runner::QueryAndIngest: one transaction per tick around every trial's rows.
    std::vector<store::Store::LogAppend> batch;
    Check(db.InTransaction([&]() -> Status {
      for (int i = 0; i < w.trials; ++i) {
        if (tick[i].empty()) continue;
        double parse_start = ThreadCpuSeconds();
        logs::ParserState next = states[i];
        logs::ParseOutput parsed = logs::ParseMetrics(tick[i], MetricFormat::kMegatron, next);
        std::vector<store::MetricRow> rows;
        rows.reserve(parsed.points.size());
        for (auto& p : parsed.points) rows.push_back({p.step, p.time_s, std::move(p.name), p.value});
        int64_t new_offset = offsets[i] + static_cast<int64_t>(parsed.consumed);
        double store_start = ThreadCpuSeconds();
        o.parse_s += store_start - parse_start;
        offsets[i] = new_offset;
        states[i] = next;
        o.rows += static_cast<int64_t>(rows.size());
        if (per_trial) Check(db.AppendMetrics(ids[i], rows, new_offset), "AppendMetrics");
        else batch.push_back({ids[i], std::move(rows), new_offset});
      }
      return per_trial ? Status::OK() : db.AppendMetricsMany(batch);
    }),
          "InTransaction");
  }
  o.seconds = ThreadCpuSeconds() - cpu_start;
  o.wall_s = Seconds(start);
  for (int i = 0; i < 20; ++i) {
    auto write_start = Clock::now();
    Check(db.RenewLease(lease.record().token, now(), ::getpid()).status(), "write the heartbeat");
    o.lease_write_s += Seconds(write_start);
    ++o.lease_writes;
  }
  o.store_s = o.seconds - o.parse_s;  // the calls and each tick's commit
  return o;
}

// ---------------------------------------------------------------------------------------------
// The limit: raw SQLite

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};
using DbPtr = std::unique_ptr<sqlite3, DbCloser>;

void Exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    Fail("\"" + sql + "\": " + msg);
  }
}

// Every row of a query, each column as text (NULL as "NULL").
std::vector<std::vector<std::string>> Query(sqlite3* db, const std::string& sql) {
  std::vector<std::vector<std::string>> out;
  auto collect = [](void* rows, int n, char** values, char**) {
    auto& v = static_cast<std::vector<std::vector<std::string>>*>(rows)->emplace_back();
    for (int k = 0; k < n; ++k) v.emplace_back(values[k] ? values[k] : "NULL");
    return 0;
  };
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), collect, &out, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    Fail("\"" + sql + "\": " + msg);
  }
  return out;
}

DbPtr OpenRaw(const fs::path& path) {
  sqlite3* raw = nullptr;
  // NOMUTEX as the store opens its connection.
  int rc =
      sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  DbPtr db(raw);
  if (rc != SQLITE_OK) Fail(path.string() + ": " + sqlite3_errstr(rc));
  return db;
}

// A database with the store's schema, pragmas, study and trials, but written by hand. The schema
// is copied from the one Store::Open just created (sqlite_master), not retyped, so it stays the
// store's own while the store changes. The pragmas are store/sql.h's kSqlConnectionPragmas,
// kSqlWriterCache and kSqlEnableWal; foreign_keys matters, it makes every metric row look up its trial.
DbPtr SetUpRaw(const fs::path& path, const fs::path& store_db, const std::vector<std::string>& names) {
  DbPtr db = OpenRaw(path);
  Exec(db.get(),
       "PRAGMA busy_timeout = 5000; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON; "
       "PRAGMA wal_autocheckpoint = 10000; PRAGMA cache_size = -8192;");
  // The journal the store picks there: a rollback journal on a network filesystem.
  if (NetworkFilesystem(path.string()).empty()) {
    if (Query(db.get(), "PRAGMA journal_mode = WAL").at(0).at(0) != "wal") Fail(path.string() + ": no WAL");
  } else if (Query(db.get(), "PRAGMA journal_mode = TRUNCATE").at(0).at(0) != "truncate") {
    Fail(path.string() + ": no rollback journal");
  }
  Exec(db.get(), "ATTACH DATABASE '" + store_db.string() + "' AS src");
  for (const auto& row : Query(db.get(), "SELECT sql FROM src.sqlite_master WHERE sql IS NOT NULL ORDER BY rowid")) {
    Exec(db.get(), row.at(0));
  }
  Exec(db.get(), "PRAGMA main.user_version = " + Query(db.get(), "PRAGMA src.user_version").at(0).at(0));
  Exec(db.get(),
       "INSERT INTO main.studies SELECT * FROM src.studies; INSERT INTO main.trials SELECT * FROM src.trials");
  Exec(db.get(), "DETACH DATABASE src");
  // Metric names get their numbers in order of first appearance, as the store numbers them.
  for (size_t k = 0; k < names.size(); ++k) {
    Exec(db.get(), fmt::format("INSERT INTO metric_names (id, name) VALUES ({}, '{}')", k + 1, names[k]));
  }
  return db;
}

// Prepared once, 10k rows per transaction, each name's number known in advance. A plain INSERT:
// the primary key is checked for a duplicate either way, and here none occurs.
// Returns the thread's CPU seconds, and the wall seconds in *wall_s.
double RunRaw(sqlite3* db, const ParsedRows& parsed, const std::vector<int64_t>& ids, double* wall_s) {
  sqlite3_stmt* stmt = nullptr;
  const char* sql = "INSERT INTO metrics (trial_id, name_id, step, time_s, value) VALUES (?1, ?2, ?3, ?4, ?5)";
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) != SQLITE_OK) Fail(sqlite3_errmsg(db));
  auto start = Clock::now();
  double cpu_start = ThreadCpuSeconds();
  Exec(db, "BEGIN");
  int64_t in_txn = 0;
  for (const RawRow& r : parsed.rows) {
    sqlite3_bind_int64(stmt, 1, ids[r.trial]);
    sqlite3_bind_int64(stmt, 2, r.name + 1);
    sqlite3_bind_int64(stmt, 3, r.step);
    sqlite3_bind_double(stmt, 4, r.time_s);
    sqlite3_bind_double(stmt, 5, r.value);
    if (sqlite3_step(stmt) != SQLITE_DONE) Fail(std::string("raw insert: ") + sqlite3_errmsg(db));
    sqlite3_reset(stmt);
    if (++in_txn == kRawRowsPerTxn) {
      Exec(db, "COMMIT; BEGIN");
      in_txn = 0;
    }
  }
  Exec(db, "COMMIT");
  double seconds = ThreadCpuSeconds() - cpu_start;
  *wall_s = Seconds(start);
  sqlite3_finalize(stmt);
  return seconds;
}

// ---------------------------------------------------------------------------------------------
// Optuna

struct OptunaResult {
  int64_t points = 0;
  double seconds = 0;
  std::string version;
};

// The first `points` lm loss values in the order ours stores them (so spread over the trials
// tick by tick), reported by bench/optuna_storage.py to a fresh SQLite storage.
std::optional<OptunaResult> RunOptuna(const ParsedRows& parsed, int trials, int64_t points, const fs::path& dir,
                                      const std::string& python, const fs::path& script) {
  auto lm_loss = std::find(parsed.names.begin(), parsed.names.end(), "lm_loss");
  if (lm_loss == parsed.names.end()) Fail("no lm_loss rows");
  int name = static_cast<int>(lm_loss - parsed.names.begin());
  json in;
  in["storage"] = "sqlite:///" + (dir / "optuna.db").string();
  in["trials"] = trials;
  in["points"] = json::array();
  for (const RawRow& r : parsed.rows) {
    if (static_cast<int64_t>(in["points"].size()) >= points) break;
    if (r.name == name) in["points"].push_back({r.trial, r.step, r.value});
  }
  std::ofstream(dir / "optuna_in.json") << in.dump();
  std::string cmd = fmt::format("'{}' '{}' '{}' > '{}'", python, script.string(), (dir / "optuna_in.json").string(),
                                (dir / "optuna_out.json").string());
  int rc = std::system(cmd.c_str());
  if (rc == 0) {
    std::ifstream f(dir / "optuna_out.json");
    json out = json::parse(f, nullptr, false);
    if (!out.is_discarded()) {
      return OptunaResult{
          out["points"].get<int64_t>(), out["seconds"].get<double>(),
          out["optuna_version"].get<std::string>() + ", SQLAlchemy " + out["sqlalchemy_version"].get<std::string>()};
    }
  }
  std::cerr << "ingest_bench: " << cmd << " failed (wait status " << rc << "); Optuna row left out\n";
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------

// Row count and sums over the metrics table, to show both databases hold the same rows.
std::vector<std::string> Fingerprint(const fs::path& path) {
  DbPtr db = OpenRaw(path);
  return Query(db.get(),
               "SELECT count(*), total(trial_id), total(step), total(time_s), total(value), "
               "total(name_id), (SELECT group_concat(id || '=' || name) FROM metric_names) FROM metrics")
      .at(0);
}

std::vector<std::vector<std::string>> Schema(const fs::path& path) {
  DbPtr db = OpenRaw(path);
  return Query(db.get(), "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name");
}

int Main(int argc, char** argv) {
  fs::path source = SLURMSWEEP_SOURCE_DIR;
  std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  int64_t lines = 200'000, optuna_points = 1000;
  int trials = 100, lines_per_tick = 10, rounds = kRounds;
  bool optuna = true;
  bool per_trial = false;  // one AppendMetrics a trial a tick, as before issue 42
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) Fail(a + " needs a value");
      return argv[++i];
    };
    if (a == "--lines") lines = std::stoll(next());
    else if (a == "--trials") trials = std::stoi(next());
    else if (a == "--lines-per-tick") lines_per_tick = std::stoi(next());
    else if (a == "--rounds") rounds = std::stoi(next());
    else if (a == "--optuna-points") optuna_points = std::stoll(next());
    else if (a == "--python") python = next();
    else if (a == "--no-optuna") optuna = false;
    else if (a == "--per-trial") per_trial = true;
    else {
      std::cerr
          << "usage: ingest_bench [--lines N] [--trials N] [--lines-per-tick N] [--rounds N] [--optuna-points N]\n"
             "                    [--python PATH] [--no-optuna] [--per-trial]\n";
      return a == "--help" ? 0 : 2;
    }
  }
  if (lines < trials || trials < 1 || lines_per_tick < 1 || optuna_points < 1 || rounds < 1) {
    Fail("need --trials >= 1, --lines >= --trials, --lines-per-tick >= 1, --rounds >= 1, --optuna-points >= 1");
  }

  fs::path dir = fs::temp_directory_path() / fmt::format("ingest_bench-{:x}", std::random_device{}());
  fs::create_directories(dir);

  auto start = Clock::now();
  Workload w = MakeWorkload(lines, trials, lines_per_tick);
  fmt::print(
      "ingest_bench: {} Megatron-LM lines ({:.0f} MB) from {} trials, {} lines per trial per tick: {} ticks, "
      "{} AppendMetrics calls; made in {:.1f} s\n",
      w.lines, static_cast<double>(w.bytes) / 1e6, w.trials, lines_per_tick, w.ticks.size(), w.chunks, Seconds(start));
  fmt::print("  first line: {}", w.ticks[0][0].substr(0, w.ticks[0][0].find('\n') + 1));

  ParsedRows parsed = ParseAlone(w);
  int64_t rows = static_cast<int64_t>(parsed.rows.size());
  fmt::print("  {} rows ({:.1f} per line): {}\n", rows, static_cast<double>(rows) / static_cast<double>(w.lines),
             fmt::join(parsed.names, ", "));

  // Paired rounds, ours and the limit taking turns to go first, on fresh databases each round: the
  // ratio of each round compares two runs made seconds apart, and the median of those ratios is
  // the figure, so a burst of someone else's work on a shared machine moves one round, not it.
  std::vector<Ours> ours_rounds;
  std::vector<double> raw_rounds, ratios;
  bool same_rows = true, same_schema = true;
  uintmax_t db_bytes = 0;
  std::vector<std::string> round_times;
  for (int round = 0; round < rounds; ++round) {
    fs::path ours_path = dir / fmt::format("ours-{}.db", round), raw_path = dir / fmt::format("raw-{}.db", round);
    std::vector<int64_t> ids;
    std::unique_ptr<store::Store> db = SetUpStore(ours_path, trials, &ids);
    DbPtr raw_db = SetUpRaw(raw_path, ours_path, parsed.names);
    Ours o;
    double r = 0, r_wall = 0;
    auto run_ours = [&] {
      o = RunOurs(w, *db, ids, per_trial);
      db.reset();
      if (o.rows != rows) Fail(fmt::format("ours stored {} rows, the parse alone gave {}", o.rows, rows));
    };
    auto run_raw = [&] {
      r = RunRaw(raw_db.get(), parsed, ids, &r_wall);
      raw_db.reset();
    };
    fmt::print("round {} of {} ...\n", round + 1, rounds);
    std::fflush(stdout);
    // A run leaves its database's pages dirty in the page cache; the kernel writing them back
    // during the next run would slow that one for the previous one's sake.
    ::sync();
    if (round % 2 == 0) {
      run_ours();
      ::sync();
      run_raw();
    } else {
      run_raw();
      ::sync();
      run_ours();
    }
    ::sync();
    std::vector<std::string> fingerprint = Fingerprint(ours_path);
    same_rows = same_rows && fingerprint == Fingerprint(raw_path) && fingerprint.at(0) == std::to_string(rows);
    same_schema = same_schema && Schema(ours_path) == Schema(raw_path);
    db_bytes = fs::file_size(ours_path);
    fs::remove(ours_path);
    fs::remove(raw_path);
    round_times.push_back(fmt::format("ours {:.2f} s, raw {:.2f} s: {:.3f} (wall {:.2f} s, {:.2f} s: {:.3f})",
                                      o.seconds, r, r / o.seconds, o.wall_s, r_wall, r_wall / o.wall_s));
    ours_rounds.push_back(o);
    raw_rounds.push_back(r);
    ratios.push_back(r / o.seconds);  // (rows / ours) / (rows / raw)
  }
  // The median round (by its ratio) gives the table's times too.
  std::vector<size_t> order(ratios.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ratios[a] < ratios[b]; });
  size_t mid = order[order.size() / 2];
  double ratio = order.size() % 2 ? ratios[mid] : (ratios[mid] + ratios[order[order.size() / 2 - 1]]) / 2;
  Ours ours = ours_rounds[mid];
  double raw_s = raw_rounds[mid];

  std::optional<OptunaResult> opt;
  if (optuna) {
    fmt::print("Optuna ...\n");
    std::fflush(stdout);
    opt = RunOptuna(parsed, trials, optuna_points, dir, python, source / "bench/optuna_storage.py");
  }
  fs::remove_all(dir);

  double ours_rate = static_cast<double>(ours.rows) / ours.seconds;
  double raw_rate = static_cast<double>(rows) / raw_s;
  fmt::print("\n{:<44} {:>11} {:>9} {:>12}\n", "contender", "rows", "seconds", "rows/s");
  fmt::print("{:<44} {:>11} {:>9.2f} {:>12.0f}\n",
             per_trial ? "ours: ParseMetrics + AppendMetrics a trial" : "ours: ParseMetrics + AppendMetricsMany",
             ours.rows, ours.seconds, ours_rate);
  fmt::print("{:<44} {:>11} {:>9.2f} {:>12.0f}\n",
             fmt::format("  of which parse ({:.0f}%)", 100 * ours.parse_s / ours.seconds), "", ours.parse_s,
             static_cast<double>(ours.rows) / ours.parse_s);
  fmt::print("{:<44} {:>11} {:>9.2f} {:>12.0f}\n",
             fmt::format("  of which store ({:.0f}%)", 100 * ours.store_s / ours.seconds), "", ours.store_s,
             static_cast<double>(ours.rows) / ours.store_s);
  fmt::print("{:<44} {:>11} {:>9.2f} {:>12.0f}\n", "limit: raw SQLite, 10k rows/transaction", rows, raw_s, raw_rate);
  double opt_rate = 0;
  if (opt) {
    opt_rate = static_cast<double>(opt->points) / opt->seconds;
    fmt::print("{:<44} {:>11} {:>9.2f} {:>12.0f}\n", "Optuna trial.report, RDB storage (SQLite)", opt->points,
               opt->seconds, opt_rate);
  }
  fmt::print("(CPU times of the thread in the median round; {} paired rounds, ours / raw each: {})\n", rounds,
             fmt::join(round_times, "; "));
  fmt::print("\nparse alone: {} lines in {:.2f} s = {:.0f} lines/s ({:.0f} rows/s)\n", w.lines, parsed.parse_s,
             static_cast<double>(w.lines) / parsed.parse_s, static_cast<double>(rows) / parsed.parse_s);
  fmt::print("ours / raw SQLite limit: {:.3f} in CPU time, median of {} paired rounds (target >= 0.8: {})\n", ratio,
             rounds, ratio >= 0.8 ? "met" : "NOT met");
  double lease_ms = 1000 * ours.lease_wall_s / static_cast<double>(std::max<int64_t>(1, ours.renewals));
  fmt::print(
      "lease renewal: {:.3f} ms per tick in wall time ({} ticks, {} heartbeat writes of {:.3f} ms each) / limit 1 "
      "ms: {:.3f} (target <= 1: {})\n",
      lease_ms, ours.renewals, ours.lease_writes, 1000 * ours.lease_write_s / std::max(1.0, 1.0 * ours.lease_writes),
      lease_ms, lease_ms <= 1 ? "met" : "NOT met");
  std::string fs_kind = NetworkFilesystem(dir.string());
  fmt::print("databases in {} ({})\n", dir.parent_path().string(),
             fs_kind.empty() ? "local filesystem, WAL" : fs_kind + ", rollback journal");
  if (opt) {
    // Optuna runs in another process: compared in wall time.
    double ours_wall_rate = static_cast<double>(ours.rows) / ours.wall_s;
    fmt::print("ours / Optuna:           {:.0f}x in wall time (target >= 500x: {})\n", ours_wall_rate / opt_rate,
               ours_wall_rate / opt_rate >= 500 ? "met" : "NOT met");
  }
  fmt::print(
      "\nOne row is one stored value: a Megatron-LM line stores {:.0f}, an Optuna report one. Both databases\n"
      "hold the same rows: {}; the same schema: {} (sqlite_master compared). Database: {:.0f} MB.\n",
      static_cast<double>(rows) / static_cast<double>(w.lines), same_rows ? "yes" : "NO", same_schema ? "yes" : "NO",
      static_cast<double>(db_bytes) / 1e6);
  if (opt) fmt::print("Optuna {}, {} trials, every point its own commit.\n", opt->version, trials);
  return same_rows && same_schema ? 0 : 1;
}

}  // namespace
}  // namespace sweep

int main(int argc, char** argv) { return sweep::Main(argc, argv); }
