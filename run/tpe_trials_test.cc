// TpeProposer: proposals stored new up to the free slots and the budget, each feasible.
#include "run/tpe_trials.h"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "base/trial_state.h"
#include "tests/fake_run.h"

namespace sweep::run {
namespace {

using testing::FakeRun;

constexpr const char* kTpe =
    "[search]\nsampler = \"tpe\"\ntrials = 5\nseed = 3\nconstraints = [\"x <= 0.8\"]\n\n"
    "[space]\nx = { min = 0.0, max = 1.0 }\nmbs = [2, 4]\n";

TEST_CASE("tpe proposer: proposes up to the free slots, then the budget, every proposal within the constraints",
          "[tpe]") {
  FakeRun run("", kTpe, "#!/bin/bash\necho {{x}} {{mbs}}\n");
  MemoryFeedback memory(run.ctx());
  TpeProposer tpe(run.ctx(), memory);
  REQUIRE(tpe.Prepare().ok());
  std::vector<store::TrialRecord> trials;
  CHECK(tpe.MoreToPropose(trials));
  REQUIRE(tpe.Propose(trials, 3).ok());
  REQUIRE(trials.size() == 3);
  CHECK(run.Trials().size() == 3);  // stored new
  CHECK(run.Count("propose") == 3);
  for (const auto& t : trials) {
    CHECK(t.state == kTrialNew);
    REQUIRE(run.ctx().specs.count(t.trial_key));
    auto x = nlohmann::json::parse(t.params_json)["x"].get<double>();
    CHECK(x <= 0.8);
  }
  // The three wait in the queue: no more until they free their slots.
  REQUIRE(tpe.Propose(trials, 3).ok());
  CHECK(trials.size() == 3);
  // Running, they leave room for the budget's last two only.
  for (auto& t : trials) t.state = "running";
  REQUIRE(tpe.Propose(trials, 8).ok());
  CHECK(trials.size() == 5);
  CHECK_FALSE(tpe.MoreToPropose(trials));
}

TEST_CASE("tpe proposer: no proposal a constraint drops or a CUDA OOM of a smaller config rules out", "[tpe]") {
  FakeRun run("", kTpe, "#!/bin/bash\necho {{x}} {{mbs}}\n");
  MemoryFeedback memory(run.ctx());
  TpeProposer tpe(run.ctx(), memory);
  TrialSpec dropped;
  dropped.params = {{"x", 0.9}, {"mbs", int64_t{2}}};
  dropped.dropped_reason = "constraint x <= 0.8";
  CHECK_FALSE(tpe.Feasible(dropped, {}));
  TrialSpec oom, bigger;
  oom.params = {{"x", 0.5}, {"mbs", int64_t{2}}};
  bigger.params = {{"x", 0.1}, {"mbs", int64_t{4}}};
  CHECK_FALSE(tpe.Feasible(bigger, {&oom}));
  CHECK(tpe.Feasible(bigger, {}));
}

}  // namespace
}  // namespace sweep::run
