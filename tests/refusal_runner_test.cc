// The run loop against a fake Slurm when sbatch refuses for a full submit quota: the trials go back
// to new at once (sbatch answered: no job went in), so no "interrupted submission" is reported.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "run/runner.h"
#include "tests/fake_sweep.h"

using namespace sweep;
using testing::FakeSweep;

TEST_CASE("a submit-quota refusal puts the trials back to new: no 'interrupted submission' follows", "[runner]") {
  FakeSweep s("[space]\nlr = [0.1, 0.2]\n", 2, "arrays = false");
  s.slurm.refuse_sbatch_quota = 1;
  s.Tick();
  CHECK(s.Events("submit_paused") == 1);
  for (const auto& t : s.Trials()) {
    CHECK(t.state == "new");
    CHECK(t.attempt == 0);
  }
  s.clock.Advance(3600);  // past any pause
  s.Tick();
  s.Tick();
  INFO(s.log());
  CHECK(s.Events("resubmit") == 0);
  CHECK_THAT(s.log(), !Catch::Contains("interrupted submission"));
  int submitted = 0;
  for (const auto& t : s.Trials()) submitted += t.job_id.empty() ? 0 : 1;
  CHECK(submitted == 2);
}

// A quota of 2 jobs (as QOS MaxSubmitJobsPerUser=2): after the refusal the rest waits for the
// study's own jobs to free slots, seen by the tick's squeue, not for a fixed time: each end lets one
// more job in at the next tick, seconds later, and sbatch is never refused again.
TEST_CASE("after a submit-quota refusal the rest goes in as the study's jobs end, not after a fixed wait", "[runner]") {
  FakeSweep s("[space]\nlr = [0.1, 0.2, 0.3, 0.4, 0.5]\n", 5, "arrays = false");
  s.slurm.submit_quota = 2;
  s.Tick();
  INFO(s.log());
  CHECK(s.Events("submit_paused") == 1);
  CHECK_THAT(s.log(), Catch::Contains("wait until fewer than 2 of this study's jobs are queued or running"));
  auto live = [&] {
    std::vector<std::string> ids;
    for (const auto& t : s.Trials()) {
      if (!t.job_id.empty() && (t.state == "pending" || t.state == "running")) ids.push_back(t.job_id);
    }
    return ids;
  };
  REQUIRE(live().size() == 2);
  // No end yet: nothing is tried, however many ticks pass within the pause.
  for (int i = 0; i < 3; ++i) {
    s.clock.Advance(2);
    s.Tick();
  }
  size_t sbatches = s.slurm.issued("sbatch").size();
  CHECK(sbatches == 3);  // two accepted, one refused
  int ended = 0;
  while (ended < 5) {
    auto ids = live();
    if (ids.empty()) break;
    s.slurm.Start(ids.front());
    s.slurm.End(ids.front(), "COMPLETED");
    ++ended;
    s.clock.Advance(2);  // one tick later: far less than the 60 s the fixed pause waited
    s.Tick();
  }
  INFO(s.log());
  int completed = 0, submitted = 0;
  for (const auto& t : s.Trials()) {
    completed += t.state == "completed" ? 1 : 0;
    submitted += t.job_id.empty() ? 0 : 1;
  }
  CHECK(submitted == 5);
  CHECK(completed == ended);
  CHECK(s.Events("submit_paused") == 1);  // never refused again
  CHECK(s.slurm.issued("sbatch").size() == 3 + 3);
}

// A site whose MaxArraySize is 4 (Slurm refuses a larger --array whole): ten trials of one group go
// as arrays of at most 4 tasks, each throttled, and sbatch refuses none.
TEST_CASE("a group larger than the site's MaxArraySize goes as several arrays; none is refused", "[runner]") {
  FakeSweep s("[space]\nlr = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]\n", 10);
  s.slurm.max_array_size = 4;
  s.Tick();
  INFO(s.log());
  std::map<std::string, int> tasks;  // array id -> its tasks
  for (const auto& t : s.Trials()) {
    REQUIRE(!t.job_id.empty());
    ++tasks[t.job_id.substr(0, t.job_id.find('_'))];
  }
  CHECK(tasks.size() == 3);
  for (const auto& [id, n] : tasks) CHECK(n <= 4);
  CHECK(s.slurm.issued("sbatch").size() == 3);
  CHECK(s.Events("submit_failed") == 0);
}

// Issue 38's node check costs a few scontrol calls per job looked at: a study whose every job waits
// behind a drained node (ReqNodeNotAvail) looks at one job per half minute, the one looked at
// longest ago, not at every job each tick; a node the cluster does not have then stops the run.
TEST_CASE("jobs waiting for ReqNodeNotAvail: one job's nodes looked up per half minute, in turn; an unknown node stops",
          "[runner]") {
  FakeSweep s("[space]\nlr = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]\n", 6, "arrays = false");
  s.Tick();
  std::vector<std::string> ids;
  for (const auto& t : s.Trials()) ids.push_back(t.job_id);
  REQUIRE(ids.size() == 6);
  for (const auto& id : ids) s.slurm.Pend(id, "ReqNodeNotAvail, May be reserved for other job", "n1");
  auto looked_at = [&] {
    std::vector<std::string> jobs;
    for (const auto& c : s.slurm.issued("scontrol")) {
      if (c.rfind("scontrol -o show job ", 0) == 0) jobs.push_back(c.substr(21));
    }
    return jobs;
  };
  size_t calls = s.slurm.issued("scontrol").size();
  s.Tick();
  INFO(s.log());
  REQUIRE(looked_at().size() == 1);
  CHECK(s.slurm.issued("scontrol").size() - calls == 3);  // the job, its node list, its one node
  for (int i = 0; i < 5; ++i) {                           // within the half minute: none
    s.clock.Advance(5);
    s.Tick();
  }
  CHECK(looked_at().size() == 1);
  for (int i = 0; i < 5; ++i) {
    s.clock.Advance(31);
    s.Tick();
  }
  std::vector<std::string> seen = looked_at();
  REQUIRE(seen.size() == 6);
  CHECK(std::set<std::string>(seen.begin(), seen.end()).size() == 6);  // each in turn, none twice
  CHECK(s.Events("stuck") == 0);                                       // n1 exists: drained, it comes back

  s.slurm.missing_nodes.insert("n9");
  for (const auto& id : ids) s.slurm.Pend(id, "ReqNodeNotAvail, May be reserved for other job", "n9");
  s.clock.Advance(31);
  auto r = s.runner().Tick();
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Contains("node(s) n9 that the cluster does not have"));
  CHECK(s.Events("stuck") == 1);
}
