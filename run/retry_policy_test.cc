// RetryPolicy: an end's class from Slurm and the log, a retry from scratch while [retry] allows,
// and a checkpointed job chained into a new one with its curve kept.
#include "run/retry_policy.h"

#include <catch2/catch.hpp>

#include "base/trial_state.h"
#include "run/submitter.h"
#include "tests/fake_run.h"

namespace sweep::run {
namespace {

using testing::FakeRun;
using testing::MegatronLine;

// A run of a one-trial study (FakeRun's `job` and `tail`), its retry policy and the ingester it reads logs through.
struct RetryRun {
  RetryRun(const std::string& job, const std::string& tail)
      : run(job, tail), stopping(run.study().stopping), ingester(run.ctx(), stopping), retry(run.ctx(), ingester) {}
  FakeRun run;
  stopping::StoppingState stopping;
  Ingester ingester;
  RetryPolicy retry;
};

// The study's single trial, submitted and run to `log`, ended by Slurm as `slurm_state`; its log read.
store::TrialRecord Ended(RetryRun& r, const std::string& log, const std::string& slurm_state) {
  FakeRun& run = r.run;
  Submitter submitter(run.ctx());
  TickReport report;
  auto trials = run.Trials();
  REQUIRE(submitter.SubmitNew(trials, submitter.FreeSlots(trials), report).ok());
  store::TrialRecord t = trials[0];
  run.slurm.Start(t.job_id);
  run.slurm.AppendLog(t.job_id, log);
  REQUIRE(r.ingester.Ingest(t).ok());
  run.slurm.End(t.job_id, slurm_state);
  t.started_at = run.clock.Now() - 100;
  t.ended_at = run.clock.Now();
  t.state = slurm_state == "FAILED" ? "failed" : slurm_state == "TIMEOUT" ? "timeout" : "completed";
  REQUIRE(run.db().UpdateTrial(t).ok());
  return t;
}

TEST_CASE("retry policy: a failed attempt starts over from scratch while [retry] allows; its run time is kept",
          "[retry_policy]") {
  RetryRun r("", "[space]\nlr = [0.1]\n\n[retry]\nfailed = 1\n");
  FakeRun& run = r.run;
  RetryPolicy& retry = r.retry;
  store::TrialRecord t = Ended(r, MegatronLine(10, 100, 2.0) + "RuntimeError: boom\n", "FAILED");
  std::string state = "failed", reason = "exit code 1";
  REQUIRE(retry.Classify(t, state, reason).ok());
  CHECK(state == "failed");
  t.state = state, t.reason = reason;
  REQUIRE(retry.MaybeRetry(t).ok());
  CHECK(t.state == kTrialNew);
  CHECK(t.job_id.empty());
  CHECK(t.prior_run_s == Approx(100));
  CHECK(t.log_offset == 0);
  auto points = run.db().MetricSeries(t.id, "lm_loss");
  REQUIRE(points.ok());
  CHECK(points->empty());
  CHECK(run.Count("retry") == 1);

  // Attempt 2 fails too: no retry left.
  t.attempt = 2;
  t.state = "failed";
  REQUIRE(retry.MaybeRetry(t).ok());
  CHECK(t.state == "failed");
  CHECK(run.Count("retry") == 1);
}

TEST_CASE("retry policy: a cancel the run asked for is classed by its request, a stop that came late is completed",
          "[retry_policy]") {
  RetryRun r("", "[space]\nlr = [0.1]\n");
  RetryPolicy& retry = r.retry;
  store::TrialRecord t = Ended(r, MegatronLine(10, 100, 2.0), "COMPLETED");
  t.stop_request = "pruned by the median rule: behind";
  std::string state = "cancelled", reason;
  REQUIRE(retry.Classify(t, state, reason).ok());
  CHECK(state == "pruned");
  state = "completed", reason.clear();
  REQUIRE(retry.Classify(t, state, reason).ok());
  CHECK(state == "completed");
  CHECK_THAT(reason, Catch::Contains("completed before the stop took effect"));
}

TEST_CASE("retry policy: a job stopped at its limit after a checkpoint goes on in a new job, its curve kept",
          "[retry_policy]") {
  RetryRun r("max_chain = 2", "[space]\nlr = [0.1]\n");
  FakeRun& run = r.run;
  RetryPolicy& retry = r.retry;
  store::TrialRecord t =
      Ended(r, MegatronLine(10, 40, 3.0) + MegatronLine(20, 40, 2.5) + "saved checkpoint at iteration 20\n", "TIMEOUT");
  auto chained = retry.MaybeChain(t);
  REQUIRE(chained.ok());
  CHECK(*chained);
  CHECK(t.state == kTrialNew);
  CHECK(t.log_offset == 0);
  CHECK(t.started_at.has_value());  // the chain's wall time runs from its first job
  auto points = run.db().MetricSeries(t.id, "lm_loss");
  REQUIRE(points.ok());
  CHECK(points->size() == 2);
  CHECK(run.Count("chain") == 1);

  // At max_chain the chain ends: timeout, recorded, no new job.
  t.attempt = 2;
  t.state = "timeout";
  t.log_offset = 0;
  auto last = retry.MaybeChain(t);
  REQUIRE(last.ok());
  CHECK(*last);
  CHECK(t.state == "timeout");
  CHECK_THAT(t.reason, Catch::Contains("max_chain"));
}

}  // namespace
}  // namespace sweep::run
