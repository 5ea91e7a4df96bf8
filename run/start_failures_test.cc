// Tests of the failure-storm rule: which ends count, and when the first ones decide.
#include "run/start_failures.h"

#include <catch2/catch.hpp>

namespace sweep::run {
namespace {

TEST_CASE("a storm is the first N counted ends all failing in one class with none completed", "[storm]") {
  CHECK(StartFailures::Needed(1) == 2);
  CHECK(StartFailures::Needed(2) == 2);
  CHECK(StartFailures::Needed(64) == 3);
  StartFailures s(3);
  s.Ended(1, "failed");
  s.Ended(1, "failed");  // the same trial again (a retry): counted once
  s.Ended(2, "pruned");  // slurmsweep's doing, and the cluster's below: not counted
  s.Ended(3, "node_fail");
  s.Ended(4, "failed");
  CHECK(s.Storm().empty());
  s.Ended(5, "failed");
  CHECK(s.Storm() == "failed");
  CHECK(s.first_trial() == 1);
  s.Completed();  // a later completion (or one from an earlier run) ends it
  CHECK(s.Storm().empty());
}

TEST_CASE("no storm when the first ends differ, or one shows the program ran", "[storm]") {
  StartFailures mixed(2);
  mixed.Ended(1, "failed");
  mixed.Ended(2, "timeout");
  mixed.Ended(3, "timeout");
  CHECK(mixed.Storm().empty());
  StartFailures oom(2);
  oom.Ended(1, "cuda_oom");  // a CUDA OOM is a size the sweep explores, not a crash
  oom.Ended(2, "cuda_oom");
  CHECK(oom.Storm().empty());
  StartFailures timeouts(2);
  timeouts.Ended(1, "timeout");
  timeouts.Ended(2, "timeout");
  CHECK(timeouts.Storm() == "timeout");
}

TEST_CASE("the changed-study warning names --resubmit timeout when trials timed out", "[storm]") {
  CHECK(ChangedStudyTimeoutHint(0, "s.toml").empty());
  CHECK_THAT(ChangedStudyTimeoutHint(2, "s.toml"), Catch::Contains("2 trial(s) ended at their time limit") &&
                                                       Catch::Contains("`slurmsweep run --resubmit timeout s.toml`"));
}

}  // namespace
}  // namespace sweep::run
