// Ingester on the fake Slurm: one round trip for a tick's logs, telemetry and start marks; a log
// another run wrote is held back unread; the tick's writes roll back as a whole.
#include "run/ingester.h"

#include <catch2/catch.hpp>

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

}  // namespace
}  // namespace sweep::run
