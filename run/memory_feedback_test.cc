// MemoryFeedback: the plan's drops, a CUDA OOM ruling out what needs as much memory, and a measured
// peak recalibrating the headroom.
#include "run/memory_feedback.h"

#include <catch2/catch.hpp>

#include "base/trial_state.h"
#include "results/phases.h"
#include "tests/fake_run.h"

namespace sweep::run {
namespace {

using testing::FakeRun;

store::TrialRecord* Find(std::vector<store::TrialRecord>& trials, const std::string& param) {
  for (auto& t : trials) {
    if (t.params_json.find(param) != std::string::npos) return &t;
  }
  FAIL("no trial with " << param);
  return nullptr;
}

TEST_CASE("memory feedback: a CUDA OOM skips new configs needing as much memory and cancels queued ones",
          "[memory_feedback]") {
  FakeRun run("", "[space]\nmbs = [4, 8, 2]\ntp = [1, 2]\n", "#!/bin/bash\necho {{mbs}} {{tp}}\n");
  MemoryFeedback memory(run.ctx());
  auto plan = memory.PlanStudy(false);
  REQUIRE(plan.ok());
  CHECK(plan->empty());  // no model: no plan, nothing dropped
  auto trials = run.Trials();
  store::TrialRecord* oom = Find(trials, R"("mbs":4,"tp":1)");
  oom->state = std::string(kTrialCudaOom);
  // mbs 8 tp 1 is queued with a job: cancelled; the rest are new.
  store::TrialRecord* queued = Find(trials, R"("mbs":8,"tp":1)");
  queued->state = "pending";
  queued->job_id = "100_1";
  for (auto& t : trials) REQUIRE(run.db().UpdateTrial(t).ok());
  REQUIRE(memory.SkipDominatedByOom(*oom, trials).ok());
  CHECK(queued->state == "pending");
  CHECK_THAT(queued->stop_request, Catch::Contains("dominated by the CUDA OOM"));
  REQUIRE(run.slurm.issued("scancel").size() == 1);
  CHECK(run.slurm.issued("scancel")[0] == "scancel 100_1");
  for (const char* p : {R"("mbs":4,"tp":2)", R"("mbs":8,"tp":2)", R"("mbs":2,"tp":1)", R"("mbs":2,"tp":2)"}) {
    INFO(p);
    CHECK(Find(trials, p)->state == kTrialNew);
  }
  CHECK(run.Count("skip") == 1);
}

TEST_CASE("memory feedback: float ranges are left out of dominance, a sampler draws them anew", "[memory_feedback]") {
  FakeRun run("", "[search]\nsampler = \"tpe\"\ntrials = 4\n\n[space]\nmbs = [4, 8]\nlr = { min = 0.001, max = 0.1 }\n",
              "#!/bin/bash\necho {{mbs}} {{lr}}\n");
  MemoryFeedback memory(run.ctx());
  TrialSpec oom, bigger, smaller;
  oom.params = {{"mbs", int64_t{4}}, {"lr", 0.01}};
  bigger.params = {{"mbs", int64_t{8}}, {"lr", 0.05}};
  smaller.params = {{"mbs", int64_t{2}}, {"lr", 0.01}};
  CHECK(memory.DominatedByOom(bigger, oom));
  CHECK_FALSE(memory.DominatedByOom(smaller, oom));
}

TEST_CASE("memory feedback: a measured peak above the plan's grows the headroom and skips what no longer fits",
          "[memory_feedback]") {
  FakeRun run("nodes = 1\ngpus_per_node = 8",
              "[job.vars]\nmodel = \"llama3.1-8b\"\ngpu_mem_gib = 400\nheadroom_gib = 0\nglobal_batch_size = 64\n"
              "seq_length = 4096\n[space]\nmbs = [1, 2, 4, 8]\ntp = [1]\n",
              "#!/bin/bash\necho {{mbs}} {{tp}}\n");
  MemoryFeedback memory(run.ctx());
  auto drops = memory.PlanStudy(false);
  REQUIRE(drops.ok());
  CHECK(drops->empty());
  auto plan = results::PlanStudy(run.study());
  REQUIRE(plan.ok());
  std::map<int64_t, double> peak;
  for (const auto& row : plan->rows) peak[std::get<int64_t>(row.trial.params[0].second)] = row.memory->Peak().Total();
  double extra = 400 * MemoryFeedback::kGiB - (peak[2] + peak[4]) / 2;
  auto trials = run.Trials();
  store::TrialRecord* done = Find(trials, "\"mbs\":1");
  done->state = "completed";
  REQUIRE(run.db().UpdateTrial(*done).ok());
  auto excess = memory.MeasuredExcess(*done);
  REQUIRE(excess.ok());
  CHECK_FALSE(excess->has_value());  // nothing measured yet
  REQUIRE(run.db()
              .AppendMetrics(done->id, {{10, 10, "mem_max_reserved_mb", (peak[1] + extra) / MemoryFeedback::kMiB}}, 100)
              .ok());
  REQUIRE(memory.CalibrateMemory(*done, trials).ok());
  CHECK(memory.headroom_bytes() == Approx(extra).epsilon(1e-6));
  CHECK(Find(trials, "\"mbs\":4")->state == kTrialSkipped);
  CHECK(Find(trials, "\"mbs\":8")->state == kTrialSkipped);
  CHECK(Find(trials, "\"mbs\":2")->state == kTrialNew);
  CHECK(run.Count("calibrate") == 1);
  // A smaller excess teaches nothing new.
  memory.RaiseHeadroom(1);
  CHECK(memory.headroom_bytes() == Approx(extra).epsilon(1e-6));
}

}  // namespace
}  // namespace sweep::run
