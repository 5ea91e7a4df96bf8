// Tests of the per-metric summaries the store keeps as it ingests (store/metric_summary.h): after
// any chunking, replay, gap, rollback or migration they equal a summary computed from scratch
// from the stored rows.
#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "store/store.h"
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

bool Same(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

void CheckSameBucket(const SeriesBucket& got, const SeriesBucket& want) {
  CHECK(got.first_step == want.first_step);
  CHECK(got.last_step == want.last_step);
  CHECK(Same(got.last_time_s, want.last_time_s));
  CHECK(got.points == want.points);
  CHECK(got.finite == want.finite);
  CHECK(Same(got.sum, want.sum));
  CHECK(Same(got.smooth_min, want.smooth_min));
  CHECK(Same(got.smooth_max, want.smooth_max));
}

// Every field, bit for bit: the same additions in the same order.
void CheckSameSummary(const MetricSummary& got, const MetricSummary& want) {
  INFO("metric " << want.name);
  CHECK(got.name == want.name);
  CHECK(got.points == want.points);
  CHECK(got.finite == want.finite);
  CHECK(got.first_step == want.first_step);
  CHECK(Same(got.first_time_s, want.first_time_s));
  CHECK(Same(got.first_value, want.first_value));
  CHECK(got.last_step == want.last_step);
  CHECK(Same(got.last_time_s, want.last_time_s));
  CHECK(Same(got.last_value, want.last_value));
  CHECK(Same(got.max_time_s, want.max_time_s));
  CHECK(Same(got.sum, want.sum));
  CHECK(Same(got.min, want.min));
  CHECK(Same(got.max, want.max));
  CHECK(got.stride == want.stride);
  CHECK(got.complete == want.complete);
  CheckSameBucket(got.open, want.open);
  REQUIRE(got.recent.size() == want.recent.size());
  for (size_t i = 0; i < want.recent.size(); ++i) CHECK(Same(got.recent[i], want.recent[i]));
  REQUIRE(got.buckets.size() == want.buckets.size());
  for (size_t i = 0; i < want.buckets.size(); ++i) {
    INFO("bucket " << i);
    CheckSameBucket(got.buckets[i], want.buckets[i]);
  }
}

// The stored summary of every metric of the trial against one computed from its stored rows.
void CheckAgainstRecomputation(Store& store, int64_t trial_id, const std::vector<std::string>& names) {
  auto summary = store.Summary(trial_id, names);
  REQUIRE(summary.ok());
  size_t with_rows = 0;
  for (const std::string& name : names) {
    auto rows = store.MetricSeries(trial_id, name);
    REQUIRE(rows.ok());
    if (rows->empty()) {
      CHECK(summary->Find(name) == nullptr);
      continue;
    }
    ++with_rows;
    std::vector<CurvePoint> points;
    for (const MetricRow& r : *rows) points.push_back({r.step, r.time_s, r.value});
    const MetricSummary* got = summary->Find(name);
    REQUIRE(got != nullptr);
    CheckSameSummary(*got, SummarizeSeries(name, points));
  }
  CHECK(summary->metrics.size() == with_rows);
}

// A trial's log: `lines` lines of three metrics; "loss" has NaNs, "late" starts at line 700, and
// `gap` lines are left out (to be filled in later, out of step order).
std::vector<std::vector<MetricRow>> MakeLines(int lines, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 0.05);
  std::vector<std::vector<MetricRow>> out;
  double t = 0;
  for (int i = 1; i <= lines; ++i) {
    int64_t step = 10 * i;
    t += 0.5 + 0.01 * (i % 7);
    std::vector<MetricRow> line;
    double loss = 2 + 8.0 / (1 + i * 0.01) + noise(rng);
    if (i % 997 == 0) loss = std::numeric_limits<double>::quiet_NaN();
    line.push_back({step, t, "loss", loss});
    line.push_back({step, t, "iter_time_ms", 500 + 50 * noise(rng)});
    if (i >= 700) line.push_back({step, t, "late", static_cast<double>(i)});
    out.push_back(std::move(line));
  }
  return out;
}

// The rows of lines [from, to) of MakeLines' output, in order.
std::vector<MetricRow> RowsOf(const std::vector<std::vector<MetricRow>>& lines, size_t from, size_t to) {
  std::vector<MetricRow> rows;
  for (size_t k = from; k < to; ++k) rows.insert(rows.end(), lines[k].begin(), lines[k].end());
  return rows;
}

const std::vector<std::string> kNames = {"iter_time_ms", "late", "loss", "never_logged"};

int64_t OneTrial(Store& store) {
  auto study = store.UpsertStudy("s", "s.toml", "h", 0);
  REQUIRE(study.ok());
  std::vector<TrialRecord> trials(2);
  trials[0].trial_key = "a";
  trials[1].trial_key = "b";
  for (auto& t : trials) t.params_json = "{}", t.state = "running";
  REQUIRE(store.InsertTrialsIfAbsent(*study, trials).ok());
  return trials[0].id;
}

TEST_CASE("Summary: ingestion in random chunks with replays and a late gap equals a recomputation",
          "[store][summary]") {
  TempDir dir;
  auto store = MustOpen(dir.file("s.db"));
  int64_t trial = OneTrial(*store);
  // 40000 lines: past 512 x 64 points, so the buckets merge twice (stride 32 -> 64 -> 128).
  auto lines = MakeLines(40000, 7);
  std::mt19937_64 rng(11);
  std::vector<size_t> gap;  // lines 3000-3019 come last
  size_t i = 0;
  int64_t offset = 0;
  while (i < lines.size()) {
    size_t n = std::uniform_int_distribution<size_t>(1, 40)(rng);
    // A replay: the chunk starts up to 3 lines back, as a tick re-reading bytes after a crash.
    size_t from = i - std::min<size_t>(i, std::uniform_int_distribution<size_t>(0, 3)(rng));
    std::vector<MetricRow> rows;
    for (size_t k = from; k < std::min(lines.size(), i + n); ++k) {
      if (k >= 3000 && k < 3020) continue;
      rows.insert(rows.end(), lines[k].begin(), lines[k].end());
    }
    REQUIRE(store->AppendMetrics(trial, rows, ++offset).ok());
    i += n;
  }
  CheckAgainstRecomputation(*store, trial, kNames);
  auto summary = store->Summary(trial, {"loss"});
  REQUIRE(summary.ok());
  CHECK(summary->Find("loss")->stride == 128);
  CHECK(summary->Find("loss")->points == 40000 - 20);
  CHECK(summary->max_step() == 400000);

  // The gap arrives (a log re-read from further back): those rows are before the last point.
  std::vector<MetricRow> rows;
  for (size_t k = 3000; k < 3020; ++k) rows.insert(rows.end(), lines[k].begin(), lines[k].end());
  REQUIRE(store->AppendMetrics(trial, rows, ++offset).ok());
  CheckAgainstRecomputation(*store, trial, kNames);
  summary = store->Summary(trial, {"loss"});
  REQUIRE(summary.ok());
  CHECK(summary->Find("loss")->points == 40000);
  CHECK(summary->rows() == 40000 * 2 + (40000 - 699));
  auto last = store->LastMetric(trial, "loss");
  REQUIRE(last.ok());
  REQUIRE(last->has_value());
  CHECK((*last)->step == 400000);
  CHECK(!store->LastMetric(trial, "never_logged").value().has_value());
}

TEST_CASE("Summary: a tick rolled back mid-way (a crash) leaves the summary of the last commit", "[store][summary]") {
  TempDir dir;
  auto store = MustOpen(dir.file("s.db"));
  int64_t trial = OneTrial(*store);
  auto lines = MakeLines(20000, 3);
  auto rows_of = [&](size_t from, size_t to) { return RowsOf(lines, from, to); };
  // Up to 16380 points: 511 complete buckets of 32, one short of the merge.
  REQUIRE(store->AppendMetrics(trial, rows_of(0, 16380), 1).ok());
  auto before = store->Summary(trial, kNames);
  REQUIRE(before.ok());
  CHECK(before->Find("loss")->complete == 511);

  // The tick's appends go through (past the merge) and then something fails before the commit.
  Status failed = store->InTransaction([&]() -> Status {
    SWEEP_RETURN_IF_ERROR(store->AppendMetrics(trial, rows_of(16380, 16500), 2));
    SWEEP_RETURN_IF_ERROR(store->AppendMetrics(trial, rows_of(16500, 16600), 3));
    return Status::Unavailable("cluster unreachable");
  });
  REQUIRE(!failed.ok());
  auto after = store->Summary(trial, kNames);
  REQUIRE(after.ok());
  REQUIRE(after->metrics.size() == before->metrics.size());
  for (size_t k = 0; k < before->metrics.size(); ++k) CheckSameSummary(after->metrics[k], before->metrics[k]);
  CHECK(store->GetTrial(trial)->log_offset == 1);
  CheckAgainstRecomputation(*store, trial, kNames);

  // The next tick reads the same bytes again: as if the failed one never happened.
  REQUIRE(store->AppendMetrics(trial, rows_of(16380, 20000), 2).ok());
  CheckAgainstRecomputation(*store, trial, kNames);
  CHECK(store->Summary(trial, {}).value().Find("loss")->stride == 64);
}

TEST_CASE("Summary: what a rolled-back tick counted is forgotten, even when its rows never come back",
          "[store][summary]") {
  // The store keeps each trial's summaries in memory across committed ticks; a tick that rolls
  // back must not leave its points in them. Here the rolled-back rows are not replayed (the
  // next tick's rows come after them), so nothing but the rollback can set the summary right.
  TempDir dir;
  auto store = MustOpen(dir.file("s.db"));
  int64_t trial = OneTrial(*store);
  auto lines = MakeLines(900, 11);
  auto rows_of = [&](size_t from, size_t to) { return RowsOf(lines, from, to); };
  REQUIRE(store->AppendMetrics(trial, rows_of(0, 300), 1).ok());
  REQUIRE(store->AppendMetrics(trial, rows_of(300, 400), 2).ok());  // a second commit: the summary is kept
  Status failed = store->InTransaction([&]() -> Status {
    SWEEP_RETURN_IF_ERROR(store->AppendMetrics(trial, rows_of(400, 600), 3));
    return Status::Unavailable("cluster unreachable");
  });
  REQUIRE(!failed.ok());
  REQUIRE(store->AppendMetrics(trial, rows_of(600, 900), 4).ok());
  CheckAgainstRecomputation(*store, trial, kNames);
  auto loss = store->Summary(trial, {});
  REQUIRE(loss.ok());
  CHECK(loss->Find("loss")->points < 800);  // 400..600 are not stored: they are not counted
}

TEST_CASE("Summary: ResetMetrics drops the summary with the rows; another trial keeps its own", "[store][summary]") {
  TempDir dir;
  auto store = MustOpen(dir.file("s.db"));
  int64_t trial = OneTrial(*store);
  auto lines = MakeLines(800, 5);
  std::vector<MetricRow> rows;
  for (const auto& l : lines) rows.insert(rows.end(), l.begin(), l.end());
  REQUIRE(store->AppendMetrics(trial, rows, 1).ok());
  REQUIRE(store->AppendMetrics(trial + 1, rows, 1).ok());
  REQUIRE(store->ResetMetrics(trial).ok());
  CHECK(store->Summary(trial, kNames).value().metrics.empty());
  CheckAgainstRecomputation(*store, trial + 1, kNames);
  // The retry's points start a new summary, from its first point.
  std::vector<MetricRow> retry(rows.begin(), rows.begin() + 30);
  REQUIRE(store->AppendMetrics(trial, retry, 1).ok());
  CheckAgainstRecomputation(*store, trial, kNames);
  auto all = store->Summaries(store->GetTrial(trial)->study_id);
  REQUIRE(all.ok());
  REQUIRE(all->size() == 2);
  CHECK((*all)[0].trial_id == trial);
  CHECK((*all)[0].Find("loss")->points == 15);  // 30 rows: 15 lines of two metrics
  CHECK((*all)[1].Find("loss")->points == 800);
}

TEST_CASE("Summary: a database from before summaries (schema 5) gets them on open, and goes on", "[store][summary]") {
  TempDir dir;
  std::string path = dir.file("old.db");
  auto lines = MakeLines(5000, 9);
  auto rows_of = [&](size_t from, size_t to) { return RowsOf(lines, from, to); };
  int64_t trial = 0, other = 0;
  {
    auto store = MustOpen(path);
    trial = OneTrial(*store);
    REQUIRE(store->AppendMetrics(trial, rows_of(0, 4500), 4500).ok());
    // The second trial too: the summaries are rebuilt trial by trial from the rows in key order.
    other = trial + 1;
    REQUIRE(store->GetTrial(other)->trial_key == "b");
    REQUIRE(store->AppendMetrics(other, RowsOf(MakeLines(700, 19), 0, 700), 700).ok());
  }
  {
    // Schema 5 exactly: what migrations 1-5 made, which a slurmsweep of before summaries wrote.
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(
        sqlite3_exec(
            db,
            "DROP TABLE metric_summaries; DROP TABLE metric_buckets; DROP INDEX IF EXISTS metrics_by_name; "
            "ALTER TABLE trials DROP COLUMN telemetry_offset; DROP TABLE controller_lease; PRAGMA user_version = 5;",
            nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  auto reader = Store::OpenReadOnly(path);
  REQUIRE(!reader.ok());  // a reader does not migrate; it says the writer will
  CHECK(reader.status().message().find("older") != std::string::npos);

  auto store = MustOpen(path);
  CheckAgainstRecomputation(*store, trial, kNames);
  CheckAgainstRecomputation(*store, other, kNames);
  CHECK(store->Summary(trial, {}).value().Find("loss")->points == 4500);
  CHECK(store->Summary(other, {}).value().Find("loss")->points == 700);
  // Ingestion goes on from the migrated summary as if it had always been kept.
  REQUIRE(store->AppendMetrics(trial, rows_of(4496, 5000), 5000).ok());
  CheckAgainstRecomputation(*store, trial, kNames);
  CHECK(store->GetTrial(trial)->log_offset == 5000);
}

TEST_CASE("Summary: MetricTable reads every row column-wise, as Metrics does row-wise", "[store][summary]") {
  TempDir dir;
  auto store = MustOpen(dir.file("s.db"));
  int64_t trial = OneTrial(*store);
  auto lines = MakeLines(900, 1);
  std::vector<MetricRow> rows;
  for (const auto& l : lines) rows.insert(rows.end(), l.begin(), l.end());
  REQUIRE(store->AppendMetrics(trial, rows, 1).ok());
  auto table = store->MetricTable(trial);
  REQUIRE(table.ok());
  REQUIRE(table->size() == 3);
  CHECK((*table)[0].name == "iter_time_ms");
  CHECK((*table)[1].name == "late");
  CHECK((*table)[2].name == "loss");
  CHECK((*table)[1].steps.size() == 201);
  CHECK((*table)[1].steps.capacity() == 201);  // reserved from the summary, never grown
  auto flat = store->Metrics(trial);
  REQUIRE(flat.ok());
  size_t k = 0;
  for (const MetricColumns& c : *table) {
    REQUIRE(c.times.size() == c.steps.size());
    REQUIRE(c.values.size() == c.steps.size());
    for (size_t i = 0; i < c.steps.size(); ++i, ++k) {
      REQUIRE(k < flat->size());
      CHECK((*flat)[k].name == c.name);
      CHECK((*flat)[k].step == c.steps[i]);
      CHECK(Same((*flat)[k].value, c.values[i]));
    }
  }
  CHECK(k == rows.size());
  // The last points of one metric, in step order.
  auto tail = store->MetricTail(trial, "loss", 10);
  REQUIRE(tail.ok());
  REQUIRE(tail->size() == 10);
  for (size_t i = 0; i < 10; ++i) CHECK(Same((*tail)[i], (*table)[2].values[890 + i]));
  CHECK(store->MetricTail(trial, "never_logged", 10).value().empty());
}

TEST_CASE("Summary: SteadyLevel leaves the start-up bucket out and shrugs off a stall", "[summary]") {
  std::vector<CurvePoint> points;
  for (int i = 1; i <= 400; ++i) points.push_back({i, i * 0.5, i == 1 ? 9000.0 : (i == 200 ? 60000.0 : 500.0)});
  MetricSummary s = SummarizeSeries("iter_time_ms", points);
  REQUIRE(s.SteadyLevel().has_value());
  CHECK(*s.SteadyLevel() == Approx(500));
  // Few points: the mean after the first.
  MetricSummary few = SummarizeSeries("iter_time_ms", {{1, 1, 9000}, {2, 2, 400}, {3, 3, 600}});
  CHECK(*few.SteadyLevel() == Approx(500));
}

}  // namespace
}  // namespace sweep::store

namespace sweep::store {
namespace {

TEST_CASE("Summary: each bucket keeps the range of the smoothed curve at its points", "[summary]") {
  // 20000 noisy points with NaNs: past 512 x 32, so the buckets have merged once.
  std::mt19937_64 rng(5);
  std::normal_distribution<double> noise(0, 0.2);
  std::vector<CurvePoint> points;
  std::vector<double> values;
  for (int i = 1; i <= 20000; ++i) {
    double v = 2 + 8.0 / (1 + i * 0.01) + noise(rng);
    if (i % 1234 == 0) v = std::numeric_limits<double>::quiet_NaN();
    points.push_back({10 * i, 0.5 * i, v});
    values.push_back(v);
  }
  MetricSummary s = SummarizeSeries("loss", points);
  REQUIRE(s.stride == 64);
  std::vector<double> smoothed = TrailingMean(values);
  std::vector<SeriesBucket> all = s.buckets;
  all.push_back(s.open);
  size_t i = 0;
  for (const SeriesBucket& b : all) {
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (int64_t k = 0; k < b.points; ++k, ++i) {
      REQUIRE(points[i].step <= b.last_step);
      if (!std::isnan(smoothed[i])) lo = std::min(lo, smoothed[i]), hi = std::max(hi, smoothed[i]);
    }
    CHECK(b.smooth_min == lo);  // the same doubles: the same summation
    CHECK(b.smooth_max == hi);
  }
  CHECK(i == values.size());
  // The last kFinalWindow values: the final value's window, and the next point's.
  REQUIRE(s.recent.size() == kFinalWindow);
  CHECK(s.HasFinalWindow());
  for (size_t k = 0; k < kFinalWindow; ++k) CHECK(Same(s.recent[k], values[values.size() - kFinalWindow + k]));
}

TEST_CASE("Summary: a schema 6 database gets the smoothed ranges on open, and goes on", "[store][summary]") {
  TempDir dir;
  std::string path = dir.file("six.db");
  auto lines = MakeLines(5000, 11);
  auto rows_of = [&](size_t from, size_t to) { return RowsOf(lines, from, to); };
  int64_t trial = 0;
  {
    auto store = MustOpen(path);
    trial = OneTrial(*store);
    REQUIRE(store->AppendMetrics(trial, rows_of(0, 3000), 3000).ok());
  }
  {
    // Schema 6: migration 7's and 8's columns gone, the summaries as a schema 6 slurmsweep wrote them.
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
    REQUIRE(
        sqlite3_exec(
            db,
            "ALTER TABLE metric_summaries DROP COLUMN open_smooth_min; "
            "ALTER TABLE metric_summaries DROP COLUMN open_smooth_max; "
            "ALTER TABLE metric_summaries DROP COLUMN recent; "
            "ALTER TABLE metric_buckets DROP COLUMN smooth_min; "
            "ALTER TABLE metric_buckets DROP COLUMN smooth_max; "
            "ALTER TABLE trials DROP COLUMN telemetry_offset; DROP TABLE controller_lease; PRAGMA user_version = 6;",
            nullptr, nullptr, nullptr) == SQLITE_OK);
    sqlite3_close(db);
  }
  auto store = MustOpen(path);
  CheckAgainstRecomputation(*store, trial, kNames);
  REQUIRE(store->AppendMetrics(trial, rows_of(3000, 5000), 5000).ok());
  CheckAgainstRecomputation(*store, trial, kNames);
}

TEST_CASE("Summary: MetricRange reads a step range and the points before it", "[store][summary]") {
  TempDir dir;
  auto store = MustOpen(dir.file("r.db"));
  int64_t trial = OneTrial(*store);
  auto lines = MakeLines(100, 3);
  std::vector<MetricRow> rows;
  for (const auto& line : lines) rows.insert(rows.end(), line.begin(), line.end());
  REQUIRE(store->AppendMetrics(trial, rows, 1).ok());
  auto got = store->MetricRange(trial, "loss", 205, 300, 4);
  REQUIRE(got.ok());
  std::vector<int64_t> steps;
  for (const CurvePoint& p : *got) steps.push_back(p.step);
  CHECK(steps == std::vector<int64_t>{170, 180, 190, 200, 210, 220, 230, 240, 250, 260, 270, 280, 290, 300});
  CHECK(got->front().value == lines[16][0].value);
  // Near the start there are fewer before; a metric not logged has none.
  CHECK(store->MetricRange(trial, "loss", 10, 20, 9)->size() == 2);
  CHECK(store->MetricRange(trial, "never_logged", 10, 20, 9)->empty());
}

// Every row of a table of `path` in key order, as text: two databases whose tables print the same hold the same.
std::vector<std::string> TableText(const std::string& path, const char* sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK);
  std::vector<std::string> rows;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    std::string row;
    for (int c = 0; c < sqlite3_column_count(stmt); ++c) {
      const unsigned char* text = sqlite3_column_text(stmt, c);
      int n = sqlite3_column_bytes(stmt, c);
      row += (text ? std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(n)) : "NULL") + "|";
    }
    rows.push_back(std::move(row));
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return rows;
}

TEST_CASE(
    "Summary: a tick's appends of many trials at once (AppendMetricsMany), with replays, gaps, rollbacks and "
    "restarts, leave the tables one AppendMetrics a chunk leaves",
    "[store][summary]") {
  // Property, over random seeds: ticks of random chunks of many trials' logs (a chunk may start up to 3 lines
  // back: a replay; some lines are held back and come later, out of step order; a trial may come twice in a
  // tick: a log read in chunks), appended all at once to one database and one AppendMetrics a chunk to another
  // (the reference). Some ticks fail before their commit and are sent again; after some commits the database is
  // closed and opened again (a restart: nothing kept in memory). The metrics, offsets, summaries and buckets end
  // the same, and each summary equals one computed from its stored rows.
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    INFO("seed " << seed);
    TempDir dir;
    std::string batch_path = dir.file("batch.db"), one_path = dir.file("one.db");
    auto batch = MustOpen(batch_path);
    auto one = MustOpen(one_path);
    constexpr int kTrials = 12;
    std::vector<int64_t> ids;
    int64_t study_id = 0;
    for (Store* store : {batch.get(), one.get()}) {
      auto study = store->UpsertStudy("s", "s.toml", "h", 0);
      REQUIRE(study.ok());
      study_id = *study;
      std::vector<TrialRecord> trials(kTrials);
      for (int k = 0; k < kTrials; ++k) {
        trials[k].trial_key = "t" + std::to_string(k);
        trials[k].params_json = "{}";
        trials[k].state = "running";
      }
      REQUIRE(store->InsertTrialsIfAbsent(*study, trials).ok());
      ids.clear();
      for (const auto& t : trials) ids.push_back(t.id);
    }
    std::mt19937_64 rng(seed);
    std::vector<std::vector<std::vector<MetricRow>>> logs;
    for (int k = 0; k < kTrials; ++k) logs.push_back(MakeLines(1500 + 300 * k, seed * 100 + k));
    std::vector<size_t> read(kTrials, 0);
    std::vector<int64_t> offset(kTrials, 0);
    std::vector<std::vector<size_t>> held(kTrials);  // lines left out, sent in a later tick
    auto pick = [&](size_t lo, size_t hi) { return std::uniform_int_distribution<size_t>(lo, hi)(rng); };
    for (int tick = 0; tick < 60; ++tick) {
      std::vector<Store::LogAppend> appends;
      for (int k = 0; k < kTrials; ++k) {
        for (int chunk = 0, chunks = static_cast<int>(pick(0, 2)); chunk < chunks; ++chunk) {
          Store::LogAppend a;
          a.trial_id = ids[k];
          if (!held[k].empty() && pick(0, 3) == 0) {  // the held lines, out of step order
            for (size_t line : held[k]) a.rows.insert(a.rows.end(), logs[k][line].begin(), logs[k][line].end());
            held[k].clear();
          } else if (read[k] < logs[k].size()) {
            size_t from = read[k] - std::min(read[k], pick(0, 3));
            size_t to = std::min(logs[k].size(), read[k] + pick(1, 60));
            for (size_t line = from; line < to; ++line) {
              if (line >= read[k] && pick(0, 40) == 0) {
                held[k].push_back(line);
                continue;
              }
              a.rows.insert(a.rows.end(), logs[k][line].begin(), logs[k][line].end());
            }
            read[k] = to;
          }
          a.new_offset = ++offset[k];
          appends.push_back(std::move(a));
        }
      }
      // Trials interleaved at random; a trial's chunks keep their order (its offsets grow).
      std::vector<Store::LogAppend> mixed;
      while (!appends.empty()) {
        size_t k = pick(0, appends.size() - 1);
        auto first = std::find_if(appends.begin(), appends.end(),
                                  [&](const Store::LogAppend& a) { return a.trial_id == appends[k].trial_id; });
        mixed.push_back(std::move(*first));
        appends.erase(first);
      }
      appends = std::move(mixed);
      if (pick(0, 5) == 0) {
        // Fails before the commit: nothing of it stays, then the same bytes are read again.
        Status failed = batch->InTransaction([&]() -> Status {
          SWEEP_RETURN_IF_ERROR(batch->KeepSummaries(study_id, ids));
          SWEEP_RETURN_IF_ERROR(batch->AppendMetricsMany(appends));
          return Status::Unavailable("cluster unreachable");
        });
        REQUIRE(!failed.ok());
      }
      if (pick(0, 1) == 0) REQUIRE(batch->KeepSummaries(study_id, ids).ok());
      REQUIRE(batch->AppendMetricsMany(appends).ok());
      for (const auto& a : appends) REQUIRE(one->AppendMetrics(a.trial_id, a.rows, a.new_offset).ok());
      if (pick(0, 6) == 0) {
        batch.reset();  // a restart: what the store kept in memory is gone
        batch = MustOpen(batch_path);
      }
    }
    batch.reset();
    one.reset();
    for (const char* sql :
         {"SELECT * FROM metrics ORDER BY trial_id, step, name_id", "SELECT id, log_offset FROM trials ORDER BY id",
          "SELECT * FROM metric_summaries ORDER BY trial_id, name_id",
          "SELECT * FROM metric_buckets ORDER BY trial_id, name_id, bucket"}) {
      INFO(sql);
      auto got = TableText(batch_path, sql);
      CHECK(!got.empty());
      CHECK(got == TableText(one_path, sql));
    }
    auto reopened = MustOpen(batch_path);
    for (int k = 0; k < kTrials; ++k) CheckAgainstRecomputation(*reopened, ids[k], kNames);
  }
}

}  // namespace
}  // namespace sweep::store
