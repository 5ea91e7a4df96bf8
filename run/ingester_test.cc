// Ingester on the fake Slurm: one round trip for a tick's logs, telemetry and start marks; a log
// another run wrote is held back unread; the tick's writes roll back as a whole.
#include "run/ingester.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "run/job_marks.h"
#include "run/submitter.h"
#include "tests/fake_run.h"

namespace sweep::run {
namespace {

using testing::FakeRun;
using testing::MegatronLine;

// The study's trials submitted (one array) and started, each with two log lines.
std::vector<store::TrialRecord> Running(FakeRun& run) {
  Submitter submitter(run.ctx());
  TickReport report;
  auto trials = run.Trials();
  REQUIRE(submitter.SubmitNew(trials, submitter.FreeSlots(trials), report).ok());
  for (auto& t : trials) {
    run.slurm.Start(t.job_id);
    run.slurm.AppendLog(t.job_id, MegatronLine(10, 100, 3.0) + MegatronLine(20, 100, 2.5));
  }
  return trials;
}

std::map<std::string, slurm::JobInfo> Jobs(FakeRun& run, const std::vector<store::TrialRecord>& trials) {
  std::vector<std::string> ids;
  for (const auto& t : trials) ids.push_back(t.job_id);
  auto jobs = run.ctx().client.Query(ids);
  REQUIRE(jobs.ok());
  return *jobs;
}

TEST_CASE("ingester: logs read from their start come with their start marks, in one round trip", "[ingester]") {
  FakeRun run("monitor = true");
  auto trials = Running(run);
  stopping::StoppingState stopping(run.study().stopping);
  Ingester ingester(run.ctx(), stopping);
  auto jobs = Jobs(run, trials);
  int before = run.trips.trips;
  Ingester::Reads reads = ingester.Read(trials, jobs);
  CHECK(run.trips.trips == before + 1);
  CHECK(reads.logs.size() == 3);
  CHECK(reads.telemetry.size() == 3);
  REQUIRE(reads.marks.size() == 3);
  for (const auto& t : trials) {
    REQUIRE(reads.marks.at(t.id).ok());
    CHECK(ParseStartMarks(*reads.marks.at(t.id)).size() == 1);
  }
  // The marks are there already: checking for foreign logs costs no further call.
  REQUIRE(ingester.HoldForeignLogs(trials, reads).ok());
  CHECK(run.trips.trips == before + 1);
  CHECK(reads.hold.empty());

  std::vector<store::TrialRecord*> all;
  for (auto& t : trials) all.push_back(&t);
  TickReport report;
  REQUIRE(ingester.IngestAll(all, reads, report).ok());
  CHECK(report.points > 0);
  CHECK(run.trips.trips == before + 1);
  for (const auto& t : trials) CHECK(t.log_offset > 0);

  // Once a log's first bytes are read, its marks are not read again.
  for (auto& t : trials) run.slurm.AppendLog(t.job_id, MegatronLine(30, 100, 2.0));
  Ingester::Reads next = ingester.Read(trials, jobs);
  CHECK(next.marks.empty());
  CHECK(next.logs.size() == 3);
}

TEST_CASE("ingester: a log whose last start names another study's job is held back, reported once", "[ingester]") {
  FakeRun run("", "[space]\nlr = [0.1]\n");
  auto trials = Running(run);
  const store::TrialRecord& t = trials[0];
  run.slurm.PutFile(
      MarksPath(t.log_path),
      *run.slurm.file(MarksPath(t.log_path)) +
          fmt::format("start job=999 restart=0 host=n2 time=1 study=theirs trial={} attempt=1\n", t.trial_key));
  stopping::StoppingState stopping(run.study().stopping);
  Ingester ingester(run.ctx(), stopping);
  auto jobs = Jobs(run, trials);
  for (int tick = 0; tick < 2; ++tick) {
    Ingester::Reads reads = ingester.Read(trials, jobs);
    REQUIRE(ingester.HoldForeignLogs(trials, reads).ok());
    CHECK(reads.hold.count(t.id));
    CHECK_FALSE(reads.logs.count(t.id));
    TickReport report;
    std::vector<store::TrialRecord*> all{&trials[0]};
    REQUIRE(ingester.IngestAll(all, reads, report).ok());
    CHECK(report.points == 0);
    CHECK(trials[0].log_offset == 0);
  }
  CHECK(run.Count("foreign_log") == 1);
}

TEST_CASE("ingester: a log shorter than what was read is a rewritten log, its chunk not ingested", "[ingester]") {
  FakeRun run("", "[space]\nlr = [0.1]\n");
  auto trials = Running(run);
  stopping::StoppingState stopping(run.study().stopping);
  Ingester ingester(run.ctx(), stopping);
  auto jobs = Jobs(run, trials);
  Ingester::Reads reads = ingester.Read(trials, jobs);
  TickReport report;
  std::vector<store::TrialRecord*> all{&trials[0]};
  REQUIRE(ingester.IngestAll(all, reads, report).ok());
  REQUIRE(trials[0].log_offset > 0);
  run.slurm.PutFile(trials[0].log_path, "");  // a new run truncated it
  Ingester::Reads again = ingester.Read(trials, jobs);
  CHECK(again.rewritten.count(trials[0].id));
  CHECK_FALSE(again.logs.count(trials[0].id));
}

TEST_CASE("ingester: the log's tail, and telemetry only from the current run's sampler", "[ingester]") {
  FakeRun run("", "[space]\nlr = [0.1]\n");
  auto trials = Running(run);
  stopping::StoppingState stopping(run.study().stopping);
  Ingester ingester(run.ctx(), stopping);
  auto n = ingester.Ingest(trials[0]);
  REQUIRE(n.ok());
  CHECK(*n > 0);
  auto tail = ingester.LogTail(trials[0]);
  REQUIRE(tail.ok());
  CHECK(tail->find("iteration       20/") != std::string::npos);
  store::TrialRecord none;
  auto empty = ingester.LogTail(none);
  REQUIRE(empty.ok());
  CHECK(empty->empty());

  store::TrialRecord t;
  t.job_id = "7";
  t.job_restarts = 1;
  CHECK_FALSE(Ingester::TelemetryOfThisRun(t, ""));
}

TEST_CASE(
    "ingester: after random interleavings of new lines over many trials and ticks, with crashes before and "
    "after commits, every point is stored once and each summary equals a recomputation",
    "[ingester][summary]") {
  // Property, over random seeds: each tick some trials log a few more lines (the last one sometimes cut in
  // two across ticks); the tick is ingested, or fails before its commit (the same bytes are read again next
  // tick), or commits and the run restarts (the store opened again, a new ingester). At the end each trial's
  // stored points are exactly its log's lines, one row per metric and line, and each metric's summary is the
  // one computed from its stored points.
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    INFO("seed " << seed);
    std::string values;
    for (int k = 1; k <= 40; ++k) values += (k > 1 ? ", " : "") + std::to_string(k);
    FakeRun run("", "[space]\nlr = [" + values + "]\n", "#!/bin/bash\necho {{lr}}\n", 40);
    Submitter submitter(run.ctx());
    TickReport submitted;
    auto trials = run.Trials();
    REQUIRE(submitter.SubmitNew(trials, submitter.FreeSlots(trials), submitted).ok());
    for (auto& t : trials) run.slurm.Start(t.job_id);
    std::mt19937_64 rng(seed);
    auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
    std::map<int64_t, std::map<int64_t, double>> logged;  // by trial: lm loss by iteration, as printed
    std::map<int64_t, std::string> cut;                   // the rest of a line cut in two
    auto stopping = std::make_unique<stopping::StoppingState>(run.study().stopping);
    auto ingester = std::make_unique<Ingester>(run.ctx(), *stopping);
    // A tick's reads of every trial's log, and every trial to ingest them into.
    std::vector<store::TrialRecord*> all;
    auto read_all = [&] {
      Ingester::Reads reads = ingester->Read(trials, Jobs(run, trials));
      REQUIRE(ingester->HoldForeignLogs(trials, reads).ok());
      all.clear();
      for (auto& t : trials) all.push_back(&t);
      return reads;
    };
    int64_t points = 0;
    for (int tick = 0; tick < 40; ++tick) {
      trials = run.Trials();
      for (const auto& t : trials) {
        std::string text = std::exchange(cut[t.id], "");
        if (text.empty() && pick(0, 2) == 0) continue;
        for (int n = pick(0, 3); n > 0; --n) {
          int64_t it = 10 * (static_cast<int64_t>(logged[t.id].size()) + 1);
          double loss = std::stod(fmt::format("{:.6E}", 2.0 + 8.0 / (1.0 + 0.01 * it) + 0.001 * pick(0, 99)));
          logged[t.id][it] = loss;
          text += MegatronLine(static_cast<int>(it), 1000000, loss);
        }
        if (!text.empty() && pick(0, 4) == 0) {
          size_t at = static_cast<size_t>(pick(1, static_cast<int>(text.size()) - 1));
          if (text.find('\n', at) != std::string::npos) cut[t.id] = text.substr(at), text.resize(at);
        }
        run.slurm.AppendLog(t.job_id, text);
      }
      Ingester::Reads reads = read_all();
      TickReport report;
      int fate = pick(0, 5);
      if (fate == 0) {
        // A crash before the commit: what the tick wrote is rolled back, and the run starts again.
        Status crashed = run.db().InTransaction([&]() -> Status {
          SWEEP_RETURN_IF_ERROR(ingester->IngestAll(all, reads, report));
          return Status::Unavailable("the machine went down");
        });
        REQUIRE(!crashed.ok());
      } else {
        REQUIRE(ingester->IngestAll(all, reads, report).ok());
        points += report.points;
      }
      if (fate <= 1) {
        run.ReopenStore();
        stopping = std::make_unique<stopping::StoppingState>(run.study().stopping);
        ingester = std::make_unique<Ingester>(run.ctx(), *stopping);
      }
    }
    // The rest of every cut line, then a last tick with nothing left behind.
    trials = run.Trials();
    for (const auto& t : trials) run.slurm.AppendLog(t.job_id, cut[t.id]);
    Ingester::Reads reads = read_all();
    TickReport report;
    REQUIRE(ingester->IngestAll(all, reads, report).ok());
    points += report.points;

    run.ReopenStore();
    int64_t rows = 0;
    const std::vector<std::string> names = {"consumed_samples", "iter_time_ms", "lm_loss", "nan_iters"};
    for (const auto& t : run.Trials()) {
      INFO("trial " << t.id);
      CHECK(t.log_offset == static_cast<int64_t>(run.slurm.file(t.log_path)->size()));
      auto count = run.db().CountMetrics(t.id);
      REQUIRE(count.ok());
      rows += *count;
      auto loss = run.db().MetricSeries(t.id, "lm_loss");
      REQUIRE(loss.ok());
      std::map<int64_t, double> stored;
      for (const auto& r : *loss) stored[r.step] = r.value;
      CHECK(loss->size() == logged[t.id].size());  // once each
      CHECK(stored == logged[t.id]);
      auto summary = run.db().Summary(t.id, names);
      REQUIRE(summary.ok());
      for (const std::string& name : names) {
        auto series = run.db().MetricSeries(t.id, name);
        REQUIRE(series.ok());
        CHECK(series->size() == logged[t.id].size());
        const store::MetricSummary* got = summary->Find(name);
        if (series->empty()) {
          CHECK(got == nullptr);
          continue;
        }
        REQUIRE(got != nullptr);
        std::vector<CurvePoint> curve;
        for (const auto& r : *series) curve.push_back({r.step, r.time_s, r.value});
        store::MetricSummary want = store::SummarizeSeries(name, curve);
        auto same = [](double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; };
        CHECK(got->points == want.points);
        CHECK(got->finite == want.finite);
        CHECK(got->first_step == want.first_step);
        CHECK(got->last_step == want.last_step);
        CHECK(same(got->last_time_s, want.last_time_s));
        CHECK(same(got->last_value, want.last_value));
        CHECK(same(got->sum, want.sum));
        CHECK(same(got->min, want.min));
        CHECK(same(got->max, want.max));
        CHECK(got->stride == want.stride);
        CHECK(got->complete == want.complete);
        CHECK(got->open.points == want.open.points);
        CHECK(same(got->open.sum, want.open.sum));
        CHECK(same(got->open.smooth_min, want.open.smooth_min));
        CHECK(got->recent.size() == want.recent.size());
        REQUIRE(got->buckets.size() == want.buckets.size());
        for (size_t i = 0; i < want.buckets.size(); ++i) {
          CHECK(got->buckets[i].last_step == want.buckets[i].last_step);
          CHECK(same(got->buckets[i].sum, want.buckets[i].sum));
          CHECK(same(got->buckets[i].smooth_max, want.buckets[i].smooth_max));
        }
      }
    }
    CHECK(rows == points);  // what the committed ticks counted is what is stored
  }
}

}  // namespace
}  // namespace sweep::run
