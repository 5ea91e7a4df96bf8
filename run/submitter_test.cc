// Submitter on the fake Slurm: grouping by the rendered #SBATCH lines, the log path filled into the
// script rendered once, and sbatch's refusals by their cause.
#include "run/submitter.h"

#include <catch2/catch.hpp>

#include "run/trial_script.h"
#include "tests/fake_run.h"

namespace sweep::run {
namespace {

using testing::FakeRun;

std::vector<store::TrialRecord> Submit(FakeRun& run, Submitter& s, TickReport& report, Status* st = nullptr) {
  auto trials = run.Trials();
  Status got = s.SubmitNew(trials, s.FreeSlots(trials), report);
  if (st) *st = got;
  else REQUIRE(got.ok());
  return trials;
}

TEST_CASE("submitter: trials whose rendered #SBATCH lines agree share one job array; the others go alone",
          "[submitter]") {
  FakeRun grouped("", "[space]\nlr = [0.1, 0.2]\nbs = [8, 16]\n", "#!/bin/bash\n#SBATCH --ntasks={{bs}}\necho {{lr}}\n",
                  8);
  Submitter s(grouped.ctx());
  TickReport report;
  auto trials = Submit(grouped, s, report);
  CHECK(report.submitted == 4);
  REQUIRE(grouped.slurm.issued("sbatch").size() == 2);  // one array per --ntasks value
  std::set<std::string> arrays;
  for (const auto& t : trials) {
    CHECK(t.state == "pending");
    CHECK(t.attempt == 1);
    CHECK_FALSE(t.array_name.empty());
    arrays.insert(t.array_name);
  }
  CHECK(arrays.size() == 2);
}

TEST_CASE("submitter: the script rendered once for grouping carries the log path it is given at submission",
          "[submitter]") {
  // {{log}} in the body, in three shell contexts: every task's script is the template rendered
  // with its own array log, as a fresh rendering would give it.
  FakeRun run("", "[space]\nlr = [0.1, 0.2, 0.3]\n",
              "#!/bin/bash\necho {{lr}} > /dev/null\necho {{log}}\necho \"log: {{log}}\"\ncat <<EOF\n{{log}}\nEOF\n",
              8);
  Submitter s(run.ctx());
  TickReport report;
  auto trials = Submit(run, s, report);
  REQUIRE(report.submitted == 3);
  for (const auto& t : trials) {
    INFO(t.trial_key);
    auto written = run.slurm.file(run.ctx().files.TrialScript(t.trial_key, t.attempt));
    REQUIRE(written);
    auto fresh = s.Script(t);  // rendered from scratch with the stored log path
    REQUIRE(fresh.ok());
    CHECK(*written == *fresh);
    CHECK(written->find(t.log_path) != std::string::npos);
    CHECK(written->find("slurmsweep-log-marker") == std::string::npos);
  }
}

TEST_CASE("submitter: a trial whose #SBATCH lines name its log goes alone, with its own log", "[submitter]") {
  FakeRun run("", "[space]\nlr = [0.1, 0.2]\n", "#!/bin/bash\n#SBATCH --error={{log}}.err\necho {{lr}}\n", 8);
  Submitter s(run.ctx());
  TickReport report;
  auto trials = Submit(run, s, report);
  CHECK(run.slurm.issued("sbatch").size() == 2);
  for (const auto& t : trials) {
    CHECK(t.array_name.empty());
    CHECK(t.log_path == run.ctx().files.TrialLog(t.trial_key, 1));
    auto written = run.slurm.file(run.ctx().files.TrialScript(t.trial_key, 1));
    REQUIRE(written);
    CHECK(written->find("#SBATCH --error='" + t.log_path + "'.err") != std::string::npos);
    CHECK(*written == *Submitter(run.ctx()).Script(t));
  }
}

TEST_CASE("submitter: free slots and queue_ahead bound what goes, and arrays are throttled to the free slots",
          "[submitter]") {
  FakeRun run("", "[space]\nlr = [0.1, 0.2, 0.3, 0.4, 0.5]\n", "#!/bin/bash\necho {{lr}}\n", 2, "queue_ahead = 1");
  Submitter s(run.ctx());
  TickReport report;
  auto trials = Submit(run, s, report);
  CHECK(report.submitted == 3);  // 2 slots + 1 queued ahead
  REQUIRE(run.slurm.issued("sbatch").size() == 1);
  CHECK(s.FreeSlots(trials) == -1);
  auto array = run.slurm.file(run.ctx().files.ArrayScript(trials[0].array_name));
  REQUIRE(array);
  CHECK(array->find("#SBATCH --array=0-2%2") != std::string::npos);
}

TEST_CASE("submitter: a refusal of the study's settings leaves the trials new and stops; a job's refusal fails it",
          "[submitter]") {
  FakeRun run;
  run.slurm.refuse_sbatch_with = "sbatch: error: Batch job submission failed: Invalid partition name specified\n";
  Submitter s(run.ctx());
  TickReport report;
  Status st;
  auto trials = Submit(run, s, report, &st);
  CHECK(st.code() == Status::Code::kInvalidArgument);
  CHECK(st.message().find("sbatch refused the study's jobs") != std::string::npos);
  for (const auto& t : run.Trials()) CHECK(t.state == kTrialNew);
  CHECK(run.Count("submit_refused") == 1);

  FakeRun other;
  other.slurm.refuse_sbatch_with =
      "sbatch: error: Batch job submission failed: Requested node configuration is not available\n";
  Submitter o(other.ctx());
  trials = Submit(other, o, report, &st);
  CHECK(st.ok());
  for (const auto& t : other.Trials()) {
    CHECK(t.state == "failed");
    CHECK(t.reason.find("sbatch refused the job") != std::string::npos);
  }
}

TEST_CASE("submitter: a full submit quota pauses submission and halves the arrays", "[submitter]") {
  FakeRun run("", "[space]\nlr = [0.1, 0.2, 0.3, 0.4]\n");
  run.slurm.refuse_sbatch_quota = 1;
  Submitter s(run.ctx());
  TickReport report;
  Status st;
  Submit(run, s, report, &st);
  CHECK(st.ok());
  CHECK(s.Paused(run.Trials()));
  CHECK(run.Count("submit_paused") == 1);
  // sbatch answered with a refusal: no job went in, so the trials are new again at once (no attempt
  // used), not "submitting" for the Reconciler to look for.
  for (const auto& t : run.Trials()) {
    CHECK(t.state == kTrialNew);
    CHECK(t.attempt == 0);
    CHECK(t.array_name.empty());
  }
}

TEST_CASE("submitter: an undone submission reuses its attempt", "[submitter]") {
  store::TrialRecord t;
  t.state = std::string(kTrialSubmitting);
  t.attempt = 2;
  t.array_name = "ss-x-arr1-2";
  t.array_index = 3;
  UndoSubmission(t);
  CHECK(t.state == kTrialNew);
  CHECK(t.attempt == 1);
  CHECK(t.array_name.empty());
  CHECK(t.array_index == -1);
}

}  // namespace
}  // namespace sweep::run
