// The run loop against a fake Slurm (tests/fake_slurm.h) in a failure storm
// (run/start_failures.h): the first trials to end all fail alike, so submission stops, the
// queued tasks that have not started are cancelled, and the message says why and how to go on.
#include <catch2/catch.hpp>

#include "run/runner.h"
#include "tests/fake_sweep.h"

using namespace sweep;
using testing::FakeSweep;

namespace {

constexpr const char* kEight = "[space]\nlr = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]\n";

void Crash(FakeSweep& s, const std::string& id) {
  s.slurm.Start(id);
  s.slurm.AppendLog(id, "loading /data/train.bin\nmissing data file /data/train.bin\n");
  s.slurm.End(id, "FAILED", 3);
}

}  // namespace

TEST_CASE(
    "failure storm: the first three trials to end all failed, so submission stops and the queued tasks are "
    "cancelled; the message has the class, the log's last lines and the way on",
    "[runner]") {
  FakeSweep s(kEight, 3);  // the whole sweep queued at once: one array of 8, 3 at a time
  s.Tick();
  REQUIRE(s.slurm.issued("sbatch").size() == 1);
  Crash(s, "100_0");
  Crash(s, "100_1");
  s.Tick();  // two: not yet a storm
  CHECK(s.slurm.issued("scancel").empty());
  s.slurm.Start("100_2");
  s.slurm.Start("100_3");
  s.slurm.AppendLog("100_3", "loading /data/train.bin\n");
  Crash(s, "100_2");
  auto stopped = s.runner().Tick();
  INFO(s.log());
  REQUIRE_FALSE(stopped.ok());
  CHECK(stopped.status().code() == Status::Code::kFailedPrecondition);
  const std::string& m = stopped.status().message();
  CHECK_THAT(m, Catch::Contains("the first 3 trials to end all ended failed and none completed"));
  CHECK_THAT(m, Catch::Contains("4 queued task(s) that had not started were cancelled"));
  CHECK_THAT(m, Catch::Contains("1 trial(s) already running go on"));
  CHECK_THAT(m, Catch::Contains("the last lines of its log") &&
                    Catch::Contains("\n    loading /data/train.bin\n    missing data file /data/train.bin"));
  CHECK_THAT(m, Catch::Contains("--resubmit failed"));
  CHECK(s.Events("failure_storm") == 1);
  auto scancel = s.slurm.issued("scancel");
  REQUIRE(scancel.size() == 1);
  CHECK(scancel[0] == "scancel 100_4 100_5 100_6 100_7");
  int failed = 0, fresh = 0, running = 0;
  for (const auto& t : s.Trials()) {
    if (t.state == "failed") {
      ++failed;
      // The reason carries the log's last non-empty line, not only the exit code.
      CHECK_THAT(t.reason, Catch::Contains("exit code 3") && Catch::Contains("missing data file /data/train.bin"));
    }
    if (t.state == "new") {
      ++fresh;
      CHECK(t.job_id.empty());
      CHECK_THAT(t.reason, Catch::StartsWith("held back: the first 3 trials to end all ended failed"));
    }
    if (t.state == "running") ++running;
  }
  CHECK(failed == 3);
  CHECK(fresh == 4);
  CHECK(running == 1);
}

TEST_CASE("failure storm: none while a trial has completed, or the first ends differ; a serial study needs two",
          "[runner]") {
  SECTION("a completed trial among the first ends") {
    FakeSweep s(kEight, 3);
    s.Tick();
    s.slurm.Start("100_0");
    s.slurm.AppendLog("100_0", "{\"step\": 1, \"lm_loss\": 2.0}\n");
    s.slurm.End("100_0", "COMPLETED");
    Crash(s, "100_1");
    Crash(s, "100_2");
    Crash(s, "100_3");
    s.Tick();
    CHECK(s.Events("failure_storm") == 0);
    CHECK(s.slurm.issued("scancel").empty());
  }
  SECTION("max_concurrent = 1: one failure is no storm, two are") {
    FakeSweep s(kEight, 1, "queue_ahead = 0");
    s.Tick();
    Crash(s, "100");
    s.Tick();
    CHECK(s.slurm.issued("sbatch").size() == 2);
    Crash(s, "101");
    auto stopped = s.runner().Tick();
    REQUIRE_FALSE(stopped.ok());
    CHECK_THAT(stopped.status().message(), Catch::Contains("the first 2 trials to end all ended failed"));
    CHECK(s.slurm.issued("sbatch").size() == 2);  // nothing more was submitted
  }
}

TEST_CASE("failure storm of timeouts: the way on is [job] time_limit and --resubmit timeout", "[runner]") {
  FakeSweep s(kEight, 2, "queue_ahead = 0", "echo {{lr}}");
  s.EditStudy("[job]\n", "[job]\ntime_limit = \"00:01:00\"\n");
  s.Tick();
  for (const char* id : {"100_0", "100_1"}) {
    s.slurm.Start(id);
    s.slurm.AppendLog(id, "{\"step\": 1, \"lm_loss\": 2.0}\n");
    s.slurm.End(id, "TIMEOUT");
  }
  auto stopped = s.runner().Tick();
  INFO(s.log());
  REQUIRE_FALSE(stopped.ok());
  CHECK_THAT(stopped.status().message(), Catch::Contains("all ended timeout") &&
                                             Catch::Contains("raise [job] time_limit (now 00:01:00)") &&
                                             Catch::Contains("`slurmsweep run --resubmit timeout "));

  // The user raises the time limit: the run says that --resubmit timeout reruns the trials that timed out.
  s.EditStudy("time_limit = \"00:01:00\"", "time_limit = \"00:10:00\"");
  s.Tick();
  INFO(s.log());
  CHECK_THAT(s.log(), Catch::Contains("2 trial(s) ended at their time limit (timeout) under the old settings") &&
                          Catch::Contains("`slurmsweep run --resubmit timeout "));
}

TEST_CASE(
    "failure storm: tasks that started or ended before the cancel keep their run and their end; --resubmit "
    "failed after a fix starts the count afresh",
    "[runner]") {
  FakeSweep s(kEight, 3);
  s.slurm.cancel_purges_pending = true;  // as Slurm: a cancelled pending task leaves squeue at once
  s.Tick();
  Crash(s, "100_0");
  Crash(s, "100_1");
  s.Tick();
  s.slurm.Start("100_2");
  Crash(s, "100_2");
  // After this tick's query and before the storm's cancel: one queued task starts, another starts
  // and fails (the states are read again before the cancel), and one starts as scancel is sent.
  int squeues = 0;
  s.slurm.on_squeue = [&](testing::FakeSlurm& slurm) {
    if (++squeues != 2) return;  // the tick's own query first, then the storm's read before the cancel
    slurm.Start("100_3");
    slurm.Start("100_4");
    slurm.AppendLog("100_4", "loading /data/train.bin\nmissing data file /data/train.bin\n");
    slurm.End("100_4", "FAILED", 3);
  };
  s.slurm.before_scancel = [&] { s.slurm.Start("100_5"); };
  auto stopped = s.runner().Tick();
  s.slurm.on_squeue = nullptr;
  INFO(s.log());
  REQUIRE_FALSE(stopped.ok());
  CHECK_THAT(stopped.status().message(), Catch::Contains("2 queued task(s) that had not started were cancelled") &&
                                             Catch::Contains("3 trial(s) already running go on"));
  CHECK(s.slurm.issued("scancel") == std::vector<std::string>{"scancel 100_5 100_6 100_7"});
  CHECK(s.slurm.job("100_3").state == "RUNNING");  // never asked to stop
  // The next tick records what they did: nothing that ran goes back to new.
  s.clock.Advance(5);
  (void)s.runner().Tick();
  std::map<std::string, std::string> by_job;
  int fresh = 0;
  for (const auto& t : s.Trials()) {
    if (t.state == "new") ++fresh;
    else by_job[t.job_id] = t.state;
  }
  CHECK(fresh == 2);
  CHECK(by_job["100_3"] == "running");
  CHECK(by_job["100_4"] == "failed");
  CHECK(by_job["100_5"] == "cancelled");  // it had started: its (cancelled) run is kept

  // The template fixed, a new `run --resubmit failed`: the old attempt still running ends under the
  // old template and does not count; two new failures are not three.
  s.clock.Advance(60);
  s.Restart();
  REQUIRE(s.runner().Prepare().ok());
  auto n = s.runner().Resubmit({"failed"});
  REQUIRE(n.ok());
  CHECK(*n == 4);
  int storms_before = s.Events("failure_storm");
  Crash(s, "100_3");
  s.Tick();
  std::vector<std::string> fresh_jobs;
  for (const auto& id : s.slurm.job_ids())
    if (id.rfind("101_", 0) == 0) fresh_jobs.push_back(id);
  REQUIRE(fresh_jobs.size() >= 2);
  Crash(s, fresh_jobs[0]);
  Crash(s, fresh_jobs[1]);
  s.Tick();
  CHECK(s.Events("failure_storm") == storms_before);
}

TEST_CASE("a job pending for a reason that never clears stops submission at first sight, with the way on", "[runner]") {
  FakeSweep s(kEight, 2, "queue_ahead = 0\narrays = false");
  s.Tick();
  auto submitted = s.slurm.issued("sbatch").size();
  REQUIRE(submitted == 2);
  s.slurm.job("100").reason = "PartitionTimeLimit";  // the partition's MaxTime is below [job] time_limit
  s.slurm.Start("101");
  s.slurm.End("101", "COMPLETED");  // a slot frees: the run would submit the next trial
  auto stopped = s.runner().Tick();
  INFO(s.log());
  REQUIRE_FALSE(stopped.ok());
  CHECK(stopped.status().code() == Status::Code::kFailedPrecondition);
  CHECK_THAT(stopped.status().message(), Catch::Contains("wait for a reason that never clears by itself") &&
                                             Catch::Contains("pending (PartitionTimeLimit)") &&
                                             Catch::Contains("[job] time_limit") &&
                                             Catch::Contains("nothing was cancelled"));
  CHECK(s.slurm.issued("sbatch").size() == submitted);  // nothing more submitted
  CHECK(s.slurm.issued("scancel").empty());
  CHECK(s.Events("stuck") == 1);
  // A reason that clears (Priority) stops nothing.
  FakeSweep ok(kEight, 2, "queue_ahead = 0\narrays = false");
  ok.Tick();
  ok.slurm.job("100").reason = "Priority";
  ok.Tick();
  CHECK(ok.Events("stuck") == 0);
}
