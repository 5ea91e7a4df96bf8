// Tests of NoResultReason: when `run` ends with exit 5.
#include "run/run_outcome.h"

#include <catch2/catch.hpp>

namespace sweep::run {
namespace {

reports::TrialRow Row(std::string state, std::optional<double> objective) {
  reports::TrialRow r;
  r.state = std::move(state);
  r.objective_value = objective;
  return r;
}

TEST_CASE("the end of a run names the trials to run again; timeouts get --resubmit timeout", "[cli]") {
  CHECK(ResubmitHint({"completed", "pruned"}, "s.toml").empty());
  CHECK(ResubmitHint({"failed", "timeout", "failed", "completed"}, "s.toml") ==
        "2 failed, 1 timeout: `slurmsweep run --resubmit failed,timeout s.toml` runs them again from scratch "
        "(timeout: raise [job] time_limit first if they need longer)\n");
  CHECK(ResubmitHint({"lost"}, "s.toml") ==
        "1 lost: `slurmsweep run --resubmit lost s.toml` runs them again from scratch\n");
}

TEST_CASE("a run whose trials all ended has a result only if a completed trial logged the objective", "[cli]") {
  CHECK(NoResultReason({Row("completed", 2.5), Row("failed", std::nullopt)}, "lm_loss").empty());
  CHECK(NoResultReason({Row("failed", std::nullopt), Row("failed", std::nullopt), Row("timeout", 3.0)}, "lm_loss") ==
        "no trial completed (2 failed, 1 timeout)");
  CHECK(NoResultReason({}, "lm_loss") == "no trial completed (no trials)");
  CHECK(NoResultReason({Row("completed", std::nullopt), Row("pruned", 2.0)}, "lm_los") ==
        "no completed trial logged the objective 'lm_los'");
}

}  // namespace
}  // namespace sweep::run
