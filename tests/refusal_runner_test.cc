// The run loop against a fake Slurm when sbatch refuses for a full submit quota: the trials go back
// to new at once (sbatch answered: no job went in), so no "interrupted submission" is reported.
#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "run/runner.h"
#include "run/submitter.h"
#include "tests/fake_sweep.h"

using namespace sweep;
using testing::FakeSweep;

namespace {

// The counts of the user's jobs in the controller (SlurmClient::CountMyJobs) issued so far.
size_t UserCounts(const testing::FakeSlurm& slurm) {
  auto sq = slurm.issued("squeue");
  return std::count_if(sq.begin(), sq.end(),
                       [](const std::string& c) { return c.find(" --me -t all ") != std::string::npos; });
}

// The space of a study of n trials: lr = 1, 2, ..., n.
std::string LrSpace(int n) {
  std::string lr;
  for (int i = 1; i <= n; ++i) lr += (i > 1 ? ", " : "") + std::to_string(i);
  return "[space]\nlr = [" + lr + "]\n";
}

// slurmctld's purge, on its own time: an ended job is forgotten MinJobAge to a minute (`late`) after it ends.
void PurgeEnded(FakeSweep& s, std::map<std::string, double>& purge_at, int min_job_age,
                const std::function<int()>& late) {
  for (const auto& id : s.slurm.job_ids()) {
    auto& j = s.slurm.job(id);
    if (j.state == "COMPLETED" && !purge_at.count(id)) purge_at[id] = j.end + min_job_age + late();
    if (purge_at.count(id) && s.clock.Now() >= purge_at[id]) j.purged = true;
  }
}

// A random round of the MaxJobCount tests: a study of n trials and the site's limits (drawn in this order).
struct ShareRound {
  int n, max_concurrent, max_job_count, min_job_age, share;
  bool arrays;
};
ShareRound DrawShareRound(const std::function<int(int, int)>& draw, int most_trials, int least_count, int most_count) {
  ShareRound r;
  r.n = draw(5, most_trials), r.max_concurrent = draw(1, r.n), r.max_job_count = draw(least_count, most_count);
  r.arrays = draw(0, 1) == 1;
  r.min_job_age = draw(0, 1) == 1 ? 0 : 120;
  r.share = std::max(1, r.max_job_count / 2);
  return r;
}

// The round's site limits on the fake Slurm, and what the round was, for a failure's message.
std::string SetLimits(FakeSweep& s, const ShareRound& r) {
  s.slurm.max_job_count = r.max_job_count;
  s.slurm.min_job_age = r.min_job_age;
  return std::to_string(r.n) + " trials, max_concurrent " + std::to_string(r.max_concurrent) + ", arrays " +
         std::to_string(r.arrays) + ", MaxJobCount " + std::to_string(r.max_job_count) + ", MinJobAge " +
         std::to_string(r.min_job_age);
}

}  // namespace

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

// A site whose scontrol does not show its configuration: the run goes on without the limits it could not
// read, and says so once, at the first submission, naming what is off and scontrol's answer.
TEST_CASE("site limits that cannot be read are said once, with scontrol's answer; the study still runs", "[runner]") {
  FakeSweep s("[space]\nlr = [0.1, 0.2, 0.3]\n", 10);
  s.slurm.config_exit = 1;
  s.Tick();
  s.clock.Advance(30);
  s.Tick();
  INFO(s.log());
  CHECK(s.Events("site_limits_unread") == 1);
  CHECK_THAT(s.log(), Catch::Contains("arrays are not split by MaxArraySize") && Catch::Contains("Access denied"));
  CHECK(s.slurm.job_ids().size() == 3);
  auto scontrol = s.slurm.issued("scontrol");
  CHECK(std::count(scontrol.begin(), scontrol.end(), "scontrol show config") == 1);  // once a run, not a tick
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

// Issue 42: a study keeps at most a share of the site's MaxJobCount in the controller (half: the rest
// is for the other users, whom slurmctld refuses too once it holds MaxJobCount jobs). Random studies
// (trials, max_concurrent, arrays or not, MaxJobCount, MinJobAge) on a fake Slurm that purges an ended
// job between MinJobAge and a minute later, as slurmctld does: the jobs it holds never exceed the share,
// sbatch never meets MaxJobCount, every trial runs once, one squeue per tick, and the run says once
// why trials wait.
TEST_CASE("a study keeps at most its share of MaxJobCount in the controller; every trial still runs once", "[runner]") {
  std::mt19937 rng(42);
  auto draw = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int round = 0; round < 8; ++round) {
    const ShareRound r = DrawShareRound(draw, 60, 2, 40);
    const int n = r.n, max_concurrent = r.max_concurrent, share = r.share;
    const bool arrays = r.arrays;
    FakeSweep s(LrSpace(n), max_concurrent, arrays ? "" : "arrays = false");
    INFO("round " << round << ": " << SetLimits(s, r));
    std::map<std::string, double> purge_at;
    auto purge = [&] { PurgeEnded(s, purge_at, r.min_job_age, [&] { return draw(0, 59); }); };
    int peak = 0;
    s.slurm.on_squeue = [&](testing::FakeSlurm& slurm) {
      int running = 0;
      for (const auto& id : slurm.job_ids()) {
        auto& j = slurm.job(id);
        if (j.state == "RUNNING" && draw(0, 2) == 0) slurm.End(id, "COMPLETED");
        running += j.state == "RUNNING" ? 1 : 0;
      }
      purge();
      for (const auto& id : slurm.job_ids()) {
        if (slurm.job(id).state == "PENDING" && running < max_concurrent) {
          slurm.Start(id);
          ++running;
        }
      }
    };
    int ticks = 0;
    for (; ticks < 2000; ++ticks) {
      size_t squeues = s.slurm.issued("squeue").size(), counts_before = UserCounts(s.slurm);
      size_t saccts = s.slurm.issued("sacct").size();
      purge();
      run::TickReport report = s.Tick();
      bool done = report.done;
      peak = std::max(peak, s.slurm.Held());
      REQUIRE(s.slurm.Held() <= share);
      // One squeue a tick; the first submitting tick also looks for live jobs of the study's name, and
      // a tick that submits near the share may count the user's jobs once more. The tick's line says
      // them all, the counts too.
      size_t counts = UserCounts(s.slurm) - counts_before;
      CHECK(counts <= 1);
      CHECK(s.slurm.issued("squeue").size() - squeues - counts <= (ticks == 0 ? 2u : 1u));
      CHECK(static_cast<size_t>(report.slurm_queries) ==
            s.slurm.issued("squeue").size() - squeues + s.slurm.issued("sacct").size() - saccts);
      if (done) break;
      s.clock.Advance(draw(1, 30));
    }
    INFO(s.log());
    CHECK(ticks < 2000);
    CHECK(s.slurm.job_ids().size() == static_cast<size_t>(n));  // one job each: none twice, none refused
    for (const auto& t : s.Trials()) {
      CHECK(t.state == "completed");
      CHECK(t.attempt == 1);
    }
    CHECK(s.Events("submit_paused") == 0);
    CHECK(s.Events("submit_throttled") == (n > share ? 1 : 0));
    if (n > share && arrays) CHECK(peak == share);  // the share is filled, not merely respected
  }
}

// Issue 42: the share of MaxJobCount is the user's, not each study's. Random studies beside random jobs
// of the same user outside them (another study's, by hand: they come and go between ticks, ended ones
// purged as slurmctld does), with MaxJobCount 4 to 80: every sbatch leaves the user's jobs in the
// controller within the share, unless the study's own stay within the part it fills without counting
// (kUncountedShare, at least one); sbatch never meets MaxJobCount; every trial runs once; a tick counts
// the user's jobs at most once, the counts a minute apart or more.
TEST_CASE("the user's jobs stay within the share of MaxJobCount beside jobs outside the study; every trial runs once",
          "[runner]") {
  std::mt19937 rng(4242);
  auto draw = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (int round = 0; round < 12; ++round) {
    const ShareRound r = DrawShareRound(draw, 80, 4, 80);
    const int n = r.n, share = r.share;
    const int uncounted = std::max(1, static_cast<int>(share * run::kUncountedShare));
    FakeSweep s(LrSpace(n), r.max_concurrent, r.arrays ? "" : "arrays = false");
    INFO("round " << round << ": " << SetLimits(s, r));
    std::map<std::string, double> purge_at;
    auto purge = [&] { PurgeEnded(s, purge_at, r.min_job_age, [&] { return draw(0, 59); }); };
    s.slurm.on_squeue = [&](testing::FakeSlurm& slurm) {
      int running = 0;
      for (const auto& id : slurm.job_ids()) {
        auto& j = slurm.job(id);
        if (j.outside) continue;
        if (j.state == "RUNNING" && draw(0, 2) == 0) slurm.End(id, "COMPLETED");
        running += j.state == "RUNNING" ? 1 : 0;
      }
      purge();
      for (const auto& id : slurm.job_ids()) {
        if (!slurm.job(id).outside && slurm.job(id).state == "PENDING" && running < r.max_concurrent) {
          slurm.Start(id);
          ++running;
        }
      }
    };
    int sbatches = 0, over = 0;
    s.slurm.after_sbatch = [&](testing::FakeSlurm& slurm) {
      ++sbatches;
      if (slurm.Held() > share && slurm.HeldOwn() > uncounted) ++over;
    };
    int outside = 0, peak_user = 0;
    std::vector<double> counted_at;
    int ticks = 0;
    for (; ticks < 5000; ++ticks) {
      // The user's other jobs, between ticks: some end, some come (up to the share; none after tick 300).
      for (const auto& id : s.slurm.job_ids()) {
        auto& j = s.slurm.job(id);
        if (j.outside && j.state == "PENDING" && draw(0, 3) == 0) s.slurm.End(id, "COMPLETED");
      }
      purge();
      int held_outside = s.slurm.Held() - s.slurm.HeldOwn();
      if (ticks < 300 && draw(0, 2) == 0 && held_outside < share) {
        outside += static_cast<int>(s.slurm.AddOutside(draw(1, share - held_outside)).size());
      }
      size_t squeues = s.slurm.issued("squeue").size(), counts_before = UserCounts(s.slurm);
      bool done = s.Tick().done;
      peak_user = std::max(peak_user, s.slurm.Held());
      size_t counts = UserCounts(s.slurm) - counts_before;
      REQUIRE(counts <= 1);
      if (counts == 1) counted_at.push_back(s.clock.Now());
      CHECK(s.slurm.issued("squeue").size() - squeues - counts <= (ticks == 0 ? 2u : 1u));
      if (done) break;
      s.clock.Advance(draw(1, 30));
    }
    INFO(s.log());
    CHECK(ticks < 5000);
    CHECK(over == 0);
    CHECK(sbatches > 0);
    CHECK(s.slurm.job_ids().size() == static_cast<size_t>(n + outside));  // one job each: none twice, none refused
    for (const auto& t : s.Trials()) {
      CHECK(t.state == "completed");
      CHECK(t.attempt == 1);
    }
    CHECK(s.Events("submit_paused") == 0);
    CHECK(s.Events("submit_throttled_user") <= 1);
    for (size_t i = 1; i < counted_at.size(); ++i) CHECK(counted_at[i] - counted_at[i - 1] >= run::kUserCountIntervalS);
    if (n > uncounted) CHECK_FALSE(counted_at.empty());  // a study beyond the uncounted part counts
  }
}

// A small study (its jobs within a tenth of the share: 500 of MaxJobCount 10,000) never counts the
// user's jobs: no squeue beyond the tick's own, even beside 4,000 of the user's jobs.
TEST_CASE("a small study does not count the user's jobs: one squeue per tick", "[runner]") {
  FakeSweep s(
      "[space]\nlr = [" +
          [] {
            std::string lr;
            for (int i = 1; i <= 40; ++i) lr += (i > 1 ? ", " : "") + std::to_string(i);
            return lr;
          }() +
          "]\n",
      40);
  s.slurm.AddOutside(4000);
  s.slurm.on_squeue = [](testing::FakeSlurm& slurm) {
    for (const auto& id : slurm.job_ids()) {
      auto& j = slurm.job(id);
      if (j.outside) continue;
      if (j.state == "RUNNING") slurm.End(id, "COMPLETED");
      else if (j.state == "PENDING") slurm.Start(id);
    }
  };
  for (int i = 0; i < 20 && !s.Tick().done; ++i) s.clock.Advance(5);
  INFO(s.log());
  for (const auto& t : s.Trials()) CHECK(t.state == "completed");
  CHECK(UserCounts(s.slurm) == 0);
  CHECK(s.Events("submit_throttled_user") == 0);
}

// The user's jobs beside the study fill the share: the study waits for them, says so once, and fills
// what they leave; a count that cannot be read keeps the study within the uncounted part (fail closed)
// and is said once.
TEST_CASE("the user's other jobs shrink the study's room, said once; a count that cannot be read fails closed",
          "[runner]") {
  std::string lr;
  for (int i = 1; i <= 30; ++i) lr += (i > 1 ? ", " : "") + std::to_string(i);
  FakeSweep s("[space]\nlr = [" + lr + "]\n", 30);
  s.slurm.max_job_count = 40;  // share 20, of which 2 without counting
  s.slurm.min_job_age = 0;
  std::vector<std::string> others = s.slurm.AddOutside(20);  // the share is full before the study starts
  s.Tick();
  CHECK(UserCounts(s.slurm) == 1);
  CHECK(s.slurm.HeldOwn() == 0);
  CHECK(s.Events("submit_throttled_user") == 1);
  CHECK(s.Events("submit_throttled") == 1);  // the study's own share (20 of 30 trials) is said too
  s.clock.Advance(5);
  s.Tick();  // no count within a minute, and nothing goes in: not even the uncounted part
  CHECK(UserCounts(s.slurm) == 1);
  CHECK(s.slurm.HeldOwn() == 0);

  for (int i = 0; i < 5; ++i) s.slurm.End(others[i], "COMPLETED");
  s.slurm.PurgeEnded();
  s.clock.Advance(56);
  s.Tick();
  CHECK(UserCounts(s.slurm) == 2);
  CHECK(s.slurm.HeldOwn() == 5);  // what the user's other jobs leave
  for (const auto& id : others) s.slurm.End(id, "COMPLETED");
  s.slurm.PurgeEnded();  // gone: 20 for the study, but not before the next count
  s.clock.Advance(30);
  s.Tick();
  CHECK(UserCounts(s.slurm) == 2);
  CHECK(s.slurm.HeldOwn() == 5);
  s.clock.Advance(31);
  s.Tick();
  CHECK(UserCounts(s.slurm) == 3);
  CHECK(s.slurm.HeldOwn() == 20);
  CHECK(s.Events("submit_throttled_user") == 1);

  // The count cannot be read from now on: squeue refuses, or answers a line that is no job id.
  SECTION("squeue refuses the count") { s.slurm.count_exit = 1; }
  SECTION("squeue answers a line that is no job id") {
    s.slurm.count_extra = "squeue: warning: slurmctld is in maintenance\n";
  }
  {
    for (const auto& id : s.slurm.job_ids()) {
      if (s.slurm.job(id).state == "PENDING") s.slurm.Start(id);
      s.slurm.End(id, "COMPLETED");
    }
    s.slurm.PurgeEnded();
    int held_max = 0;
    s.slurm.after_sbatch = [&](testing::FakeSlurm& slurm) { held_max = std::max(held_max, slurm.HeldOwn()); };
    s.slurm.on_squeue = [](testing::FakeSlurm& slurm) {
      for (const auto& id : slurm.job_ids()) {
        if (slurm.job(id).state != "PENDING") continue;
        slurm.Start(id);
        slurm.End(id, "COMPLETED");
      }
      slurm.PurgeEnded();
    };
    for (int i = 0; i < 200 && !s.Tick().done; ++i) s.clock.Advance(20);
    INFO(s.log());
    for (const auto& t : s.Trials()) CHECK(t.state == "completed");
    CHECK(held_max == 2);
    CHECK(s.Events("user_jobs_unread") == 1);
  }
}
