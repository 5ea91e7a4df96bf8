// The run loop against a fake Slurm when sbatch refuses for a full submit quota: the trials go back
// to new at once (sbatch answered: no job went in), so no "interrupted submission" is reported.
#include <catch2/catch.hpp>

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
