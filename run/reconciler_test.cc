// Reconciler on the fake Slurm: trials left "submitting" are adopted by name, by their start marks
// once Slurm has purged the job, or go back to new; a job Slurm ran again ends its attempt.
#include "run/reconciler.h"

#include <catch2/catch.hpp>

#include "tests/fake_run.h"

namespace sweep::run {
namespace {

using testing::FakeRun;
using testing::MegatronLine;

// A lost sbatch answer: the trials are left "submitting", their job exists (or not).
struct Collaborators {
  explicit Collaborators(FakeRun& run)
      : stopping(run.study().stopping),
        submitter(run.ctx()),
        ingester(run.ctx(), stopping),
        reconciler(run.ctx(), submitter, ingester) {}
  stopping::StoppingState stopping;
  Submitter submitter;
  Ingester ingester;
  Reconciler reconciler;
};

std::vector<store::TrialRecord> SubmitLosingAnswer(FakeRun& run, Collaborators& c) {
  run.slurm.lose_sbatch_answers = 1;
  auto trials = run.Trials();
  TickReport report;
  Status st = c.submitter.SubmitNew(trials, c.submitter.FreeSlots(trials), report);
  REQUIRE(st.IsUnavailable());
  for (const auto& t : trials) REQUIRE(t.state == kTrialSubmitting);
  return trials;
}

TEST_CASE("reconciler: a submission whose answer was lost is adopted by name, each task by its index", "[reconciler]") {
  FakeRun run("", "[space]\nlr = [0.1, 0.2]\n");
  Collaborators c(run);
  auto trials = SubmitLosingAnswer(run, c);
  REQUIRE(c.reconciler.Reconcile(trials).ok());
  for (const auto& t : run.Trials()) {
    CHECK(t.state == "pending");
    CHECK(t.job_id == fmt::format("100_{}", t.array_index));
  }
  CHECK(run.Count("adopt") == 2);
  CHECK(run.slurm.issued("squeue").size() == 1);  // one call for every name
}

TEST_CASE("reconciler: a purged job without accounting is adopted from its start mark; no job at all goes back to new",
          "[reconciler]") {
  FakeRun run("", "[space]\nlr = [0.1]\n");
  run.slurm.accounting = false;
  Collaborators c(run);
  auto trials = SubmitLosingAnswer(run, c);
  run.slurm.Start("100");
  run.slurm.End("100", "COMPLETED");
  run.slurm.PurgeEnded();
  REQUIRE(c.reconciler.Reconcile(trials).ok());
  CHECK(trials[0].job_id == "100");
  CHECK(trials[0].state == "running");  // the next query finds out what Slurm still knows
  CHECK(run.events.back().message.find("found by its start mark") != std::string::npos);

  FakeRun never("", "[space]\nlr = [0.1]\n");
  Collaborators d(never);
  never.slurm.accounting = false;
  auto gone = SubmitLosingAnswer(never, d);
  never.slurm.job("100").purged = true;  // it never ran, and Slurm forgot it
  REQUIRE(d.reconciler.Reconcile(gone).ok());
  CHECK(gone[0].state == kTrialNew);
  CHECK(gone[0].attempt == 0);
  CHECK(never.Count("resubmit") == 1);
}

TEST_CASE("reconciler: a job Slurm ran again under its id ends the attempt; the new run is read from its start",
          "[reconciler]") {
  FakeRun run("", "[space]\nlr = [0.1]\n\n[retry]\npreempted = 1\n");
  Collaborators c(run);
  auto trials = run.Trials();
  TickReport report;
  REQUIRE(c.submitter.SubmitNew(trials, c.submitter.FreeSlots(trials), report).ok());
  run.slurm.Start("100", "n1");
  run.slurm.AppendLog("100", MegatronLine(10, 100, 3.0));
  REQUIRE(c.ingester.Ingest(trials[0]).ok());
  trials[0].state = "running";
  REQUIRE(trials[0].log_offset > 0);

  run.slurm.Requeue("100");
  auto jobs = run.ctx().client.Query({"100"});
  REQUIRE(jobs.ok());
  Ingester::Reads reads = c.ingester.Read(trials, *jobs);
  REQUIRE(c.reconciler.HandleRestarts(trials, *jobs, reads).ok());
  CHECK(trials[0].attempt == 2);
  CHECK(trials[0].job_restarts == 1);
  CHECK(trials[0].log_offset == 0);
  CHECK(run.Count("requeue") == 1);
  // Its new run has not started (no start mark of restart 1): not read this tick.
  CHECK(reads.hold.count(trials[0].id));
  CHECK_FALSE(reads.logs.count(trials[0].id));
}

}  // namespace
}  // namespace sweep::run
