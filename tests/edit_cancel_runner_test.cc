// Control of a run going on (issue 41): a study file edited under a running controller is noticed
// and the trials the edit leaves outside [space] are named; `cancel --outside-space` cancels only
// them; a `cancel` recorded after a run started wins over what it would submit, one from before it
// does not. On the fake Slurm (tests/fake_sweep.h). Tagged [runner].
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <string>

#include "run/cancel_request.h"
#include "run/outside_space.h"
#include "run/runner.h"
#include "tests/fake_sweep.h"
#include "tests/test_util.h"

using namespace sweep;
using Sweep = testing::FakeSweep;

namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE(
    "an edit of [space] under a running controller names the trials it leaves outside; cancel "
    "--outside-space cancels only them",
    "[runner]") {
  Sweep s("[space]\nlr = [0.1, 0.2, 0.3]\n", 3);
  s.Tick();  // one array of three
  for (const auto& t : s.Trials()) s.slurm.Start(t.job_id);
  s.Tick();
  std::string gone = s.Trial("\"lr\":0.3").trial_key, kept = s.Trial("\"lr\":0.1").trial_key;
  // The user edits the file while the run goes on: 0.3 leaves the space, 0.4 comes in.
  std::string text = testing::ReadAll(s.file("study.toml"));
  text.replace(text.find("0.3]"), 4, "0.4]");
  testing::WriteAll(s.file("study.toml"), text);
  REQUIRE(s.runner().Run(1).ok());
  INFO(s.log());
  CHECK_THAT(s.log(), Catch::Contains(s.file("study.toml") + " was edited while this run goes on") &&
                          Catch::Contains("this run goes on with the file as it started"));
  CHECK_THAT(s.log(), Catch::Contains("1 trial(s) not ended fall outside the new [space]") &&
                          Catch::Contains(gone + " (running)") &&
                          Catch::Contains("`slurmsweep cancel --outside-space " + s.file("study.toml")));
  CHECK(s.Events("edited") == 1);
  // Said once per edit, not every tick; what it runs is unchanged (no trial of 0.4 yet).
  REQUIRE(s.runner().Run(2).ok());
  CHECK(s.Events("edited") == 1);
  CHECK(s.Trials().size() == 3);
  // An edit that leaves every trial in the space says so.
  text.replace(text.find("lr = ["), 6, "lr = [0.3, ");
  testing::WriteAll(s.file("study.toml"), text);
  REQUIRE(s.runner().Run(1).ok());
  CHECK(s.Events("edited") == 2);
  CHECK_THAT(s.log(), Catch::Contains("No trial that has not ended falls outside the new [space]"));

  // The next run of the edited file (without 0.3 again) says at its start what still holds a slot.
  s.EditStudy("lr = [0.3, 0.1, 0.2, 0.4]", "lr = [0.1, 0.2, 0.4]");
  REQUIRE(s.runner().Prepare().ok());
  CHECK_THAT(s.log(), Catch::Contains("outside the space: 1 trial(s) of an earlier version of " + s.file("study.toml") +
                                      "; 1 not ended (1 on Slurm, holding that many of "
                                      "max_concurrent = 3 slots): " +
                                      gone + " (running)"));
  // `cancel --outside-space`: only that trial's task, by its own id, not its array.
  auto outside = run::TrialsOutsideSpace(s.study(), s.Trials());
  REQUIRE(outside.ok());
  REQUIRE(outside->size() == 1);
  CHECK(outside->front().trial_key == gone);
  std::set<std::string> keys;
  for (const auto& t : run::StillOpen(*outside)) keys.insert(t.trial_key);
  auto n = s.runner().CancelOnly(keys);
  REQUIRE(n.ok());
  CHECK(*n == 1);
  REQUIRE(!s.slurm.issued("scancel").empty());
  CHECK(s.slurm.issued("scancel").back() == "scancel " + s.Trial("\"lr\":0.3").job_id);
  s.Tick();
  CHECK(s.Trial("\"lr\":0.3").state == "cancelled");
  CHECK(s.Trial("\"lr\":0.1").state == "running");
  CHECK(s.Trial("\"lr\":0.1").trial_key == kept);
}

TEST_CASE("a cancel recorded after a run started wins over what it would submit; one from before it does not",
          "[runner]") {
  Sweep s("[space]\nlr = [0.1, 0.2, 0.3, 0.4]\n", 2);
  REQUIRE(s.runner().Prepare().ok());
  // A cancel before this run: the run was started after it (run reads the last one at its start).
  auto old = run::RequestCancel(s.db(), s.runner().study_id(), s.clock.Now());
  REQUIRE(old.ok());
  auto seen = run::LastCancelRequest(s.db(), s.study().name);
  REQUIRE(seen.ok());
  CHECK(*seen == *old);
  s.runner().set_cancel_seen(*seen);
  s.Tick();
  CHECK(s.slurm.issued("sbatch").size() == 1);  // it runs: the old request is not its
  for (const auto& t : s.Trials())
    if (!t.job_id.empty()) s.slurm.Start(t.job_id);
  // `cancel` now: the run, whatever the cancel itself found, cancels what it has and submits nothing more.
  auto request = run::RequestCancel(s.db(), s.runner().study_id(), s.clock.Now());
  REQUIRE(request.ok());
  s.Tick();
  INFO(s.log());
  CHECK(s.slurm.issued("sbatch").size() == 1);
  CHECK(s.slurm.issued("scancel").size() == 1);
  auto answer = run::AwaitCancelAnswer(s.db(), s.runner().study_id(), *request, s.clock, 0);
  REQUIRE(answer.ok());
  REQUIRE(answer->has_value());
  CHECK_THAT(**answer, Catch::Contains("cancelled 4 trial(s) at the request of `slurmsweep cancel`"));
  // Its jobs end as cancelled; then the run is done, with nothing more submitted.
  run::TickReport r;
  for (int i = 0; i < 3; ++i) r = s.Tick();
  CHECK(r.done);
  CHECK(s.slurm.issued("sbatch").size() == 1);
  for (const auto& t : s.Trials()) CHECK(t.state == "cancelled");
  CHECK(Count(s.log(), "at the request of") == 1);
}
