// Which pending reasons stop a study's submission (pending_reason.h).
#include "slurm/pending_reason.h"

#include <catch2/catch.hpp>

#include <random>
#include <string>

namespace sweep::slurm {

TEST_CASE("pending reasons that never clear name the setting to change; those that clear name nothing",
          "[slurm][pending]") {
  CHECK_THAT(NeverClearingReason("PartitionTimeLimit"), Catch::Contains("[job] time_limit"));
  CHECK_THAT(NeverClearingReason("QOSMaxWallDurationPerJobLimit"), Catch::Contains("[job] time_limit"));
  CHECK_THAT(NeverClearingReason("AccountNotAllowed"), Catch::Contains("[cluster] account"));
  CHECK_THAT(NeverClearingReason("PartitionNodeLimit"), Catch::Contains("[job] nodes"));
  for (const char* clears :
       {"Priority", "Resources", "JobArrayTaskLimit", "QOSMaxJobsPerUserLimit", "AssocGrpCpuLimit", "Dependency",
        "BeginTime", "NodeDown", "None", "", "ReqNodeNotAvail, UnavailableNodes:n1", "launch failed requeued held",
        // shown for a moment before the real reason (PartitionTimeLimit) on the lab
        "PartitionConfig"}) {
    INFO(clears);
    CHECK(NeverClearingReason(clears).empty());
  }
}

// By property: a reason is judged by its code alone (what follows a comma or a space is detail),
// and random text that is no code of Slurm's is never taken for one.
TEST_CASE("pending reasons: judged by the code before any detail; random text is never a code", "[slurm][pending]") {
  std::mt19937 rng(7);
  const std::string alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789,: _";
  for (int i = 0; i < 2000; ++i) {
    std::string detail;
    for (int n = static_cast<int>(rng() % 20); n > 0; --n) detail += alphabet[rng() % alphabet.size()];
    CHECK(NeverClearingReason("PartitionTimeLimit, " + detail) == NeverClearingReason("PartitionTimeLimit"));
    CHECK(NeverClearingReason("Priority " + detail).empty());
    std::string random = "x" + detail;
    CHECK(NeverClearingReason(random).empty());
  }
}

}  // namespace sweep::slurm
