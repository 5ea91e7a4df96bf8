// Integration tests against the real test cluster (tests/cluster/start.sh): real slurmctld,
// real slurmd nodes, real sshd, real libssh. Tagged [cluster]; CTest starts the cluster first.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <thread>
#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "run/repeat_top.h"
#include "run/connect.h"
#include "results/phases.h"
#include "results/report_data.h"
#include "results/report_files.h"
#include "results/study_trials.h"
#include "run/runner.h"
#include "slurm/slurm_client.h"
#include "slurm/transport.h"
#include "study/loader.h"
#include "reports/study_report.h"
#include "store/store.h"
#include "tests/cluster_harness.h"
#include "tests/test_util.h"

using namespace sweep;
using testing::Harness;
namespace fs = std::filesystem;

namespace {

constexpr const char* kTemplate = R"(#!/bin/bash
set -euo pipefail
exec {{workdir}}/mlp_train --micro-batch-size {{mbs}} --lr {{lr}} --optimizer {{optimizer}} \
  --hidden 16 --train-iters {{iters}} --log-interval 5 --sleep-ms {{sleep_ms}} --fail-at-iter {{fail_at}}
)";

// kTemplate passing the seed on, for studies with repeats.
constexpr const char* kSeededTemplate = R"(#!/bin/bash
set -euo pipefail
exec {{workdir}}/mlp_train --micro-batch-size {{mbs}} --lr {{lr}} --optimizer {{optimizer}} --seed {{seed}} \
  --hidden 16 --train-iters {{iters}} --log-interval 5 --sleep-ms {{sleep_ms}} --fail-at-iter {{fail_at}}
)";

// Writes a study that runs the example workload over SSH on the test cluster.
std::string WriteStudy(const testing::TempDir& dir, const std::string& name, const std::string& space,
                       const std::string& vars, int max_concurrent = 8, const std::string& tmpl = kTemplate,
                       const std::string& known_hosts = "", const std::string& extra = "") {
  testing::WriteAll(dir.file("job.sbatch"), tmpl);
  std::string text = fmt::format(
      R"([study]
name = "{name}"

[cluster]
transport = "ssh"
host = "{host}"
port = {port}
user = "{user}"
identity_file = "{key}"
known_hosts = "{known}"
partition = "{partition}"
workdir = "{work}"
max_concurrent = {maxc}
poll_interval_s = 0.5

[job]
template = "job.sbatch"
cpus_per_task = 1
mem = "200M"
time_limit = "00:05:00"
stage = ["{bin}/bin/mlp_train"]

[job.vars]
{vars}

{space}

{extra}
)",
      fmt::arg("name", name), fmt::arg("host", testing::ClusterVar("SLURMSWEEP_SSH_HOST")),
      fmt::arg("port", testing::ClusterVar("SLURMSWEEP_SSH_PORT")),
      fmt::arg("user", testing::ClusterVar("SLURMSWEEP_SSH_USER")),
      fmt::arg("key", testing::ClusterVar("SLURMSWEEP_SSH_KEY")),
      fmt::arg("known", known_hosts.empty() ? testing::ClusterVar("SLURMSWEEP_SSH_KNOWN_HOSTS") : known_hosts),
      fmt::arg("partition", testing::ClusterVar("SLURMSWEEP_PARTITION")), fmt::arg("work", dir.file("work")),
      fmt::arg("maxc", max_concurrent), fmt::arg("bin", SLURMSWEEP_BINARY_DIR), fmt::arg("vars", vars),
      fmt::arg("space", space), fmt::arg("extra", extra));
  testing::WriteAll(dir.file("study.toml"), text);
  return dir.file("study.toml");
}

}  // namespace

TEST_CASE("a study runs to completion over SSH and a second run submits nothing", "[cluster][versions]") {
  testing::TempDir dir;
  std::string path =
      WriteStudy(dir, "happy", "[space]\noptimizer = [\"sgd\", \"adam\"]\nlr = [0.01, 0.05]\nmbs = [4]\n",
                 "iters = 40\nsleep_ms = 0\nfail_at = 0\n");
  {
    Harness h(path);
    REQUIRE(h.runner->Run(240).ok());
    auto trials = h.Trials();
    REQUIRE(trials.size() == 4);
    for (const auto& t : trials) {
      INFO(t.trial_key << " " << t.state << " " << t.reason << "\n" << h.log.str());
      CHECK(t.state == "completed");
      CHECK_FALSE(t.job_id.empty());
      CHECK(t.exit_code == "0:0");
      CHECK(h.store->CountMetrics(t.id).value() > 0);
      auto last = h.store->LastMetric(t.id, "lm_loss");
      REQUIRE(last.ok());
      REQUIRE(last->has_value());
      CHECK((*last)->step == 40);
      // One job array for the four: the trial is a task of it, its own log name points at the task's log.
      CHECK(t.job_id.rfind(trials[0].job_id.substr(0, trials[0].job_id.find('_')) + "_", 0) == 0);
      CHECK(testing::ReadAll(fmt::format("{}/logs/happy/{}.1.out", dir.file("work"), t.trial_key)) ==
            testing::ReadAll(t.log_path));
    }
    CHECK(h.runner->slurm_stats().sbatch == 1);
    // The array script on the cluster side carries the comment tag it is found by after a crash.
    std::string script =
        testing::ReadAll(fmt::format("{}/scripts/happy/{}.sbatch", dir.file("work"), trials[0].array_name));
    CHECK_THAT(script,
               Catch::Contains(fmt::format("#SBATCH --comment=slurmsweep:study=happy:array={}", trials[0].array_name)));
    CHECK_THAT(script, Catch::Contains("#SBATCH --array=0-3%4"));
    // The report has a row per trial with its final loss.
    auto rows = results::CollectTrialRows(*h.store, h.study, h.runner->study_id(), h.clock.Now());
    REQUIRE(rows.ok());
    REQUIRE(rows->size() == 4);
    for (const auto& r : *rows) {
      CHECK(r.objective_value.has_value());
      CHECK(r.steps == 40);
    }
  }
  // A second run of the finished study submits nothing and changes no trial.
  Harness again(path);
  REQUIRE(again.runner->Run(5).ok());
  CHECK(again.runner->slurm_stats().sbatch == 0);
  for (const auto& t : again.Trials()) CHECK(t.state == "completed");
}

TEST_CASE("a trial that exits non-zero is FAILED with its exit code; metrics before it are kept",
          "[cluster][versions]") {
  testing::TempDir dir;
  std::string path = WriteStudy(dir, "failing", "[space]\noptimizer = [\"adam\"]\nlr = [0.01]\nfail_at = [0, 12]\n",
                                "iters = 30\nsleep_ms = 0\nmbs = 4\n");
  Harness h(path);
  REQUIRE(h.runner->Run(240).ok());
  auto failed = h.Trial("\"fail_at\":12");
  INFO(h.log.str());
  CHECK(failed.state == "failed");
  CHECK(failed.exit_code == "3:0");
  CHECK_THAT(failed.reason, Catch::Contains("exit code 3"));
  auto last = h.store->LastMetric(failed.id, "lm_loss");
  REQUIRE(last.ok());
  REQUIRE(last->has_value());
  CHECK((*last)->step == 10);
  CHECK(h.Trial("\"fail_at\":0").state == "completed");
}

TEST_CASE("a failure storm stops the sweep: the first trials all crash, the queued tasks are cancelled and wait",
          "[cluster]") {
  testing::TempDir dir;
  // A study that crashes at start: every trial would fail.
  constexpr const char* kCrash = R"(#!/bin/bash
echo "loading /data/train-{{lr}}.bin"
echo "missing data file /data/train-{{lr}}.bin" >&2
exit 3
)";
  std::string space = "[space]\nlr = [";
  for (int i = 1; i <= 20; ++i) space += fmt::format("{}0.{:02d}", i > 1 ? ", " : "", i);
  std::string path = WriteStudy(dir, "storm", space + "]\n", "", 2, kCrash);
  Harness h(path);
  Status st = h.runner->Run(240);
  INFO(h.log.str());
  REQUIRE_FALSE(st.ok());
  CHECK(st.code() == Status::Code::kFailedPrecondition);
  CHECK_THAT(st.message(), Catch::Contains("trials to end all ended failed and none completed") &&
                               Catch::Contains("missing data file /data/train-0.") &&
                               Catch::Contains("--resubmit failed"));
  int failed = 0, held = 0;
  for (const auto& t : h.Trials()) {
    if (t.state == "failed") {
      ++failed;
      CHECK_THAT(t.reason, Catch::Contains("exit code 3") && Catch::Contains("missing data file /data/train-"));
    } else if (t.state == "new") {
      ++held;
      CHECK(t.job_id.empty());
    }
  }
  CHECK(failed >= 2);
  CHECK(held >= 1);  // never ran: waits for the next run
  CHECK(failed + held <= 20);
  CHECK(h.runner->slurm_stats().sbatch == 1);
  CHECK(h.runner->slurm_stats().scancel <= 1);  // none when every queued task had started by then
}

TEST_CASE("a partition sbatch refuses stops the run with the reason; no trial is marked, the fixed study runs",
          "[cluster][versions]") {
  testing::TempDir dir;
  std::string path = WriteStudy(dir, "badpart", "[space]\nlr = [0.01, 0.02]\n",
                                "iters = 10\nsleep_ms = 0\nmbs = 4\noptimizer = \"sgd\"\nfail_at = 0\n");
  std::string good = testing::ReadAll(path), partition = testing::ClusterVar("SLURMSWEEP_PARTITION");
  std::string bad = good;
  bad.replace(bad.find("partition = \"" + partition + "\""), 14 + partition.size(), "partition = \"nosuchpart\"");
  testing::WriteAll(path, bad);
  {
    Harness h(path);
    Status st = h.runner->Run(20);
    REQUIRE_FALSE(st.ok());
    CHECK(st.code() == Status::Code::kInvalidArgument);
    CHECK_THAT(st.message(), Catch::Contains("sbatch refused the study's jobs") && Catch::Contains("partition"));
    for (const auto& t : h.Trials()) CHECK(t.state == "new");
  }
  testing::WriteAll(path, good);
  Harness h(path);
  REQUIRE(h.runner->Run(240).ok());
  for (const auto& t : h.Trials()) CHECK(t.state == "completed");
}

TEST_CASE("run stops submitting when the first trial never logs the objective; the fixed name goes on, nothing lost",
          "[cluster]") {
  testing::TempDir dir;
  std::string path = WriteStudy(dir, "typo", "[space]\nlr = [0.01, 0.02, 0.03]\n",
                                "iters = 30\nsleep_ms = 0\nmbs = 4\noptimizer = \"sgd\"\nfail_at = 0\n", 1, kTemplate,
                                "", "[objective]\nmetric = \"lm_los\"\n");
  std::string good = testing::ReadAll(path);
  std::string text = good;
  text.replace(text.find("max_concurrent = 1\n"), 19, "max_concurrent = 1\nqueue_ahead = 0\n");
  testing::WriteAll(path, text);
  std::string bin = std::string(SLURMSWEEP_BINARY_DIR) + "/bin/slurmsweep";
  auto [code, out] = testing::RunShell(bin + " run " + path + " 2>&1");
  INFO(out);
  CHECK(code == 2);
  CHECK_THAT(out, Catch::Contains("never the objective 'lm_los'") && Catch::Contains("did you mean 'lm_loss'") &&
                      Catch::Contains("Submission stopped") && Catch::Contains("slurmsweep run " + path));
  {
    Harness h(path);
    REQUIRE(h.runner->Prepare().ok());
    int submitted = 0;
    for (const auto& t : h.Trials()) submitted += t.job_id.empty() ? 0 : 1;
    CHECK(submitted == 1);  // one trial ran; the other two never reached sbatch
  }
  // The name fixed, the same database goes on: the first trial's stored points rank it.
  text.replace(text.find("lm_los\""), 7, "lm_loss\"");
  testing::WriteAll(path, text);
  auto [code2, out2] = testing::RunShell(bin + " run " + path + " 2>&1");
  INFO(out2);
  CHECK(code2 == 0);
  Harness h(path);
  REQUIRE(h.runner->Prepare().ok());
  for (const auto& t : h.Trials()) {
    CHECK(t.state == "completed");
    auto last = h.store->LastMetric(t.id, "lm_loss");
    REQUIRE(last.ok());
    CHECK(last->has_value());
  }
}

TEST_CASE("cancel stops running jobs and unsubmitted trials; the run loop sees them cancelled", "[cluster][versions]") {
  testing::TempDir dir;
  std::string path = WriteStudy(dir, "cancelme", "[space]\nlr = [0.01, 0.02, 0.03]\n",
                                "iters = 100000\nsleep_ms = 20\nmbs = 4\noptimizer = \"sgd\"\nfail_at = 0\n",
                                /*max_concurrent=*/2);
  Harness h(path);
  REQUIRE(h.runner->Prepare().ok());
  REQUIRE(h.TickUntil(60, [](const auto& trials) {
    return std::count_if(trials.begin(), trials.end(), [](const auto& t) { return t.state == "running"; }) == 2;
  }));
  // The tick line tells running from queued: the third task waits behind the array's %2.
  auto r = h.runner->Tick();
  REQUIRE(r.ok());
  CHECK(r->running == 2);
  CHECK(r->queued == 1);
  int before = h.runner->slurm_stats().scancel;
  auto n = h.runner->CancelAll();
  REQUIRE(n.ok());
  CHECK(*n == 3);
  CHECK(h.runner->slurm_stats().scancel == before + 1);  // one scancel for both jobs
  // What `slurmsweep cancel` does next: record the ends without a run loop and without submitting.
  auto open = h.runner->AwaitEnds(60, 0.5);
  REQUIRE(open.ok());
  CHECK(*open == 0);
  for (const auto& t : h.Trials()) {
    INFO(t.trial_key << " " << t.reason);
    CHECK(t.state == "cancelled");
    CHECK_THAT(t.reason, Catch::Contains("slurmsweep cancel"));
  }
  REQUIRE(h.runner->Run(60).ok());
  CHECK(h.runner->slurm_stats().sbatch == 1);  // one array of three, at most two running
}

TEST_CASE("cancelled trials run again from scratch with run --resubmit cancelled", "[cluster]") {
  testing::TempDir dir;
  std::string path = WriteStudy(dir, "again", "[space]\nlr = [0.01, 0.02]\n",
                                "iters = 400\nsleep_ms = 50\nmbs = 4\noptimizer = \"sgd\"\nfail_at = 0\n",
                                /*max_concurrent=*/1);
  Harness h(path);
  REQUIRE(h.runner->Prepare().ok());
  // Running long enough to cost something in Slurm's whole seconds: 2 s of logged iterations.
  REQUIRE(h.TickUntil(60, [&](const auto& trials) {
    return std::any_of(trials.begin(), trials.end(), [&](const auto& t) {
      return t.state == "running" && testing::CountPoints(*h.store, t.id, "lm_loss") >= 8;
    });
  }));
  REQUIRE(h.runner->CancelAll().ok());
  auto open = h.runner->AwaitEnds(60, 0.5);
  REQUIRE(open.ok());
  REQUIRE(*open == 0);
  double ran = 0;
  for (const auto& t : h.Trials()) {
    REQUIRE(t.state == "cancelled");  // one ran a while, one never started
    if (t.started_at && t.ended_at) ran += *t.ended_at - *t.started_at;
  }
  CHECK(ran > 0);
  auto n = h.runner->Resubmit({"cancelled"});
  REQUIRE(n.ok());
  CHECK(*n == 2);
  for (const auto& t : h.Trials()) {
    CHECK(t.state == "new");
    CHECK(h.store->CountMetrics(t.id).value() == 0);  // from scratch: the cancelled attempt's points are gone
  }
  // Shorter now, so the test ends soon: [job.vars] are not part of the trial key.
  std::string text = testing::ReadAll(path);
  text.replace(text.find("iters = 400"), 11, "iters = 40");
  testing::WriteAll(path, text);
  Harness again(path);
  REQUIRE(again.runner->Run(240).ok());
  INFO(again.log.str());
  double prior = 0;
  for (const auto& t : again.Trials()) {
    CHECK(t.state == "completed");
    CHECK(t.attempt == 2);
    CHECK(testing::CountPoints(*again.store, t.id, "lm_loss") == 8);
    prior += t.prior_run_s;
  }
  CHECK(prior > 0);  // the cancelled attempt that ran is still part of the cost
}

TEST_CASE("one squeue call per tick however many trials are active", "[cluster]") {
  testing::TempDir dir;
  std::string path =
      WriteStudy(dir, "many", "[space]\nlr = [0.01, 0.02, 0.03, 0.04, 0.05, 0.06]\nmbs = [2, 4, 8, 16]\n",
                 "iters = 20\nsleep_ms = 20\noptimizer = \"sgd\"\nfail_at = 0\n", /*max_concurrent=*/24);
  Harness h(path);
  REQUIRE(h.runner->Prepare().ok());
  int max_active = 0;
  bool done = false;
  for (int i = 0; i < 400 && !done; ++i) {
    int squeue_before = h.runner->slurm_stats().squeue;
    auto r = h.runner->Tick();
    REQUIRE(r.ok());
    max_active = std::max(max_active, r->active);
    // With jobs in flight: exactly one squeue; with none: none at all, but for the tick of this
    // database's first submission, which looks once for live jobs of the study's name (issue 38).
    CHECK(h.runner->slurm_stats().squeue - squeue_before == (r->active > 0 || i == 0 ? 1 : 0));
    done = r->done;
    h.clock.SleepFor(0.3);
  }
  CHECK(done);
  CHECK(max_active >= 20);
  for (const auto& t : h.Trials()) CHECK(t.state == "completed");
}

// Issue 42: the count of the user's jobs (SlurmClient::CountMyJobs, one squeue) is what slurmctld counts
// toward MaxJobCount: each task of a pending array (slurm.conf: each task counts as one job before it
// has a record of its own), and a cancelled job until it is purged. Taken as a difference around a held
// array of 5 tasks: slurmctld purges older jobs once a minute, so a difference a purge disturbed is
// taken again.
TEST_CASE("the user's jobs are counted as slurmctld counts them for MaxJobCount: each array task, ended ones too",
          "[cluster]") {
  setenv("SLURM_CONF", testing::ClusterVar("SLURM_CONF").c_str(), 1);
  auto transport = slurm::NewLocalTransport();
  slurm::SlurmClient client(*transport);
  testing::TempDir dir;
  int held_more = -1, cancelled_more = -1;
  for (int attempt = 0; attempt < 3 && !(held_more == 5 && cancelled_more == 5); ++attempt) {
    auto before = client.CountMyJobs();
    REQUIRE(before.ok());
    std::string id =
        testing::Capture(fmt::format("cd {} && sbatch --parsable --hold --array=0-4 -p {} -o /dev/null --wrap true",
                                     dir.path().string(), testing::ClusterVar("SLURMSWEEP_PARTITION")));
    id = id.substr(0, id.find('\n'));
    REQUIRE_FALSE(id.empty());
    auto held = client.CountMyJobs();
    testing::Capture("scancel " + id);
    auto cancelled = client.CountMyJobs();
    REQUIRE(held.ok());
    REQUIRE(cancelled.ok());
    held_more = *held - *before;
    cancelled_more = *cancelled - *before;
  }
  CHECK(held_more == 5);       // not 1: each pending task
  CHECK(cancelled_more == 5);  // ended, still held until purged
  CHECK(client.stats().squeue == client.stats().total());
}

// Issue 7's acceptance: a 50+ trial study goes to Slurm as arrays (one sbatch per array), with a
// constant number of squeue calls per tick; a CUDA OOM cancels the queued tasks it dominates and a
// failed task is retried on its own (a mixed study).
TEST_CASE(
    "a 60-trial study is one job array: one sbatch, one squeue per tick; OOM-dominated tasks cancelled, a retry alone",
    "[cluster]") {
  testing::TempDir dir;
  std::string tmpl = R"TPL(#!/bin/bash
set -euo pipefail
if [ {{mbs}} = 16 ] && [ {{seed}} = 1 ]; then
  echo "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 4.00 GiB" >&2; exit 1
fi
if [ {{mbs}} = 1 ] && [ {{seed}} = 2 ] && [ {{attempt}} = 1 ]; then exit 3; fi
exec {{workdir}}/mlp_train --micro-batch-size {{mbs}} --seed {{seed}} --lr 0.05 --optimizer sgd \
  --hidden 16 --train-iters 40 --log-interval 5 --sleep-ms 40
)TPL";
  // Grid order: parameters by name, the first varying slowest, so (mbs 16, seed 1) is task 0 and
  // the config it dominates, (mbs 32, seed 1), is task 50: still queued when task 0 runs out of memory.
  // Six at once, so that task 50 waits for 44 tasks to end (at least 8 waves of ~2 s) while the run
  // sees the OOM at its second tick: with 12 at once (4 waves) a tick slowed by a loaded machine
  // (22 s in one CI run) saw it only after task 50 had run.
  std::string path = WriteStudy(dir, "arrays",
                                "[space]\nmbs = [16, 1, 2, 4, 8, 32]\n"
                                "seed = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n",
                                "x = 1\n", /*max_concurrent=*/6, tmpl, "", "[retry]\nfailed = 1\n");
  Harness h(path);
  REQUIRE(h.runner->Prepare().ok());
  bool done = false;
  int max_squeue = 0;
  for (int i = 0; i < 600 && !done; ++i) {
    int squeue_before = h.runner->slurm_stats().squeue;
    auto r = h.runner->Tick();
    REQUIRE(r.ok());
    int squeue = h.runner->slurm_stats().squeue - squeue_before;
    max_squeue = std::max(max_squeue, squeue);
    CHECK(squeue == (r->active > 0 || i == 0 ? 1 : 0));  // tick 0: the first submission's live-job check
    done = r->done;
    if (!done) h.clock.SleepFor(0.5);
  }
  INFO(h.log.str());
  REQUIRE(done);
  CHECK(max_squeue == 1);
  // One sbatch for the array of 60, one for the retry.
  CHECK(h.runner->slurm_stats().sbatch == 2);
  auto trials = h.Trials();
  REQUIRE(trials.size() == 60);
  std::string array_id = trials[0].job_id.substr(0, trials[0].job_id.find('_'));
  std::map<std::string, int> states;
  for (const auto& t : trials) {
    INFO(t.params_json << " " << t.state << " " << t.reason << " job " << t.job_id);
    ++states[t.state];
    if (t.params_json == R"({"mbs":16,"seed":1})") {
      CHECK(t.state == "cuda_oom");
    } else if (t.params_json == R"({"mbs":32,"seed":1})") {
      CHECK(t.state == "skipped");
      CHECK_THAT(t.reason, Catch::Contains("dominated by the CUDA OOM"));
      CHECK(t.job_id == array_id + "_50");
      CHECK(h.store->CountMetrics(t.id).value() == 0);  // cancelled before it started
    } else if (t.params_json == R"({"mbs":1,"seed":2})") {
      CHECK(t.state == "completed");
      CHECK(t.attempt == 2);
      CHECK(t.job_id.find('_') == std::string::npos);  // resubmitted alone, as a plain job
    } else {
      CHECK(t.state == "completed");
      CHECK(t.attempt == 1);
      CHECK(t.job_id.rfind(array_id + "_", 0) == 0);
      CHECK(testing::CountPoints(*h.store, t.id, "lm_loss") == 8);
    }
  }
  CHECK(states["completed"] == 58);
  // Slurm's own record: one array of 60 tasks throttled to 6 running at once; the task cancelled
  // while queued never ran, so Slurm keeps no record of it.
  CHECK_THAT(testing::ReadAll(fmt::format("{}/scripts/arrays/{}.sbatch", dir.file("work"), trials[0].array_name)),
             Catch::Contains("#SBATCH --array=0-59%6"));
  std::string listed = testing::Capture(
      fmt::format("SLURM_CONF={} squeue -h -r -t all -j {} -o %i", testing::ClusterVar("SLURM_CONF"), array_id));
  CHECK(std::count(listed.begin(), listed.end(), '\n') == 59);
  CHECK_THAT(listed, !Catch::Contains(array_id + "_50\n"));
}

TEST_CASE("hostile parameter values reach the job literally and run nothing", "[cluster]") {
  testing::TempDir dir;
  std::string marker = dir.file("pwned");
  std::string hostile = "$(touch " + marker + "); `touch " + marker + "` '\\\" x";
  // Outside the safe alphabet, so declared text and assigned once, as README's template section says.
  std::string tmpl = "#!/bin/bash\nVAL={{val}}\nprintf 'value=[%s]\\n' \"$VAL\"\n";
  // TOML literal string: no escapes, so the value is exactly what a user typed.
  std::string path = WriteStudy(dir, "quoting", "[space]\nval = { values = ['''" + hostile + "'''], text = true }\n",
                                "x = 1\n", 8, tmpl);
  Harness h(path);
  REQUIRE(h.runner->Run(120).ok());
  auto trials = h.Trials();
  REQUIRE(trials.size() == 1);
  CHECK(trials[0].state == "completed");
  std::string log = testing::ReadAll(trials[0].log_path);
  CHECK(log == "value=[" + hostile + "]\n");
  CHECK_FALSE(fs::exists(marker));
}

TEST_CASE("negative numbers, a declared option and a declared path reach the job as values", "[cluster]") {
  testing::TempDir dir;
  // printf's arguments after its format: -0.5 and -x are values here, as the trainer's own
  // arguments after `--` or after --opt= are.
  std::string tmpl =
      "#!/bin/bash\nprintf 'lr=[%s] shift=[%s] opt=[%s] data=[%s]\\n' {{lr}} {{shift}} --opt={{opt}} {{data}}\n";
  std::string path = WriteStudy(dir, "negatives",
                                "[space]\nlr = { min = -1, max = -0.1 }\nshift = [-0.5, -1e-3]\n"
                                "opt = { values = [\"-x\"], option = true }\n",
                                "data = { value = \"/data/./sets/../y\", path = true }\n", 8, tmpl, "",
                                "[search]\nsampler = \"random\"\ntrials = 4\nseed = 5\n");
  Harness h(path);
  REQUIRE(h.runner->Run(120).ok());
  auto trials = h.Trials();
  REQUIRE(trials.size() == 4);
  std::set<std::string> shifts;
  for (const auto& t : trials) {
    INFO(t.trial_key << " " << t.params_json << " " << t.reason);
    CHECK(t.state == "completed");
    auto params = nlohmann::json::parse(t.params_json);
    double lr = params["lr"].get<double>();
    CHECK(lr < -0.1);
    CHECK(lr >= -1);
    std::string shift = ParamToString(params["shift"].get<double>());
    shifts.insert(shift);
    CHECK(testing::ReadAll(t.log_path) ==
          fmt::format("lr=[{}] shift=[{}] opt=[--opt=-x] data=[/data/y]\n", ParamToString(lr), shift));
  }
  CHECK(shifts.count("-0.5") + shifts.count("-0.001") >= 1);
}

TEST_CASE("a job that completes without its log is stored failed, saying so, not completed", "[cluster]") {
  testing::TempDir dir;
  std::string tmpl = "#!/bin/bash\nrm -f {{log}}\necho lr {{lr}}\n";
  std::string path = WriteStudy(dir, "nolog", "[space]\nlr = [0.1]\n", "x = 1\n", 8, tmpl);
  Harness h(path);
  h.runner->Run(120);
  auto trials = h.Trials();
  REQUIRE(trials.size() == 1);
  INFO(trials[0].reason);
  CHECK(trials[0].state == "failed");
  CHECK_THAT(trials[0].reason, Catch::Contains("completed, but it left no log at " + trials[0].log_path));
}

TEST_CASE("the CLI refuses a server whose host key is not known, and runs nothing", "[cluster]") {
  testing::TempDir dir;
  testing::WriteAll(dir.file("empty_known_hosts"), "");
  std::string path = WriteStudy(dir, "unknownkey", "[space]\nlr = [0.01]\n",
                                "iters = 10\nsleep_ms = 0\nmbs = 4\noptimizer = \"sgd\"\nfail_at = 0\n", 8, kTemplate,
                                dir.file("empty_known_hosts"));
  auto [code, out] = testing::RunShell(fmt::format("{}/bin/slurmsweep run {} 2>&1", SLURMSWEEP_BINARY_DIR, path));
  INFO(out);
  CHECK(code == 4);
  CHECK_THAT(out, Catch::Contains("not in") || Catch::Contains("unknown"));
  CHECK_FALSE(fs::exists(dir.file("work")));

  std::string wrong = WriteStudy(dir, "changedkey", "[space]\nlr = [0.01]\n",
                                 "iters = 10\nsleep_ms = 0\nmbs = 4\noptimizer = \"sgd\"\nfail_at = 0\n", 8, kTemplate,
                                 testing::ClusterVar("SLURMSWEEP_SSH_WRONG_KNOWN_HOSTS"));
  auto [code2, out2] = testing::RunShell(fmt::format("{}/bin/slurmsweep run {} 2>&1", SLURMSWEEP_BINARY_DIR, wrong));
  INFO(out2);
  CHECK(code2 == 4);
  CHECK_THAT(out2, Catch::Contains("CHANGED"));
}

TEST_CASE("an unknown host key is recorded only when the user names its exact fingerprint", "[cluster]") {
  testing::TempDir dir;
  testing::WriteAll(dir.file("known_hosts"), "");
  std::string path = WriteStudy(dir, "acceptkey", "[space]\nlr = [0.01]\n",
                                "iters = 10\nsleep_ms = 0\nmbs = 4\noptimizer = \"sgd\"\nfail_at = 0\n", 8, kTemplate,
                                dir.file("known_hosts"));
  std::string lab = testing::ClusterVar("SLURMSWEEP_LAB");
  auto [kc, fp_line] = testing::RunShell("ssh-keygen -l -E sha256 -f " + lab + "/ssh/ssh_host_ed25519_key.pub");
  REQUIRE(kc == 0);
  std::string fingerprint =
      fp_line.substr(fp_line.find("SHA256:"), fp_line.find(' ', fp_line.find("SHA256:")) - fp_line.find("SHA256:"));
  std::string bin = std::string(SLURMSWEEP_BINARY_DIR) + "/bin/slurmsweep";

  auto [wrong, wrong_out] =
      testing::RunShell(bin + " run --max-ticks 1 --accept-host-key SHA256:AAAAnotthekeyAAAA " + path + " 2>&1");
  INFO(wrong_out);
  CHECK(wrong == 4);
  CHECK(testing::ReadAll(dir.file("known_hosts")).empty());

  auto [ok, ok_out] = testing::RunShell(bin + " run --accept-host-key " + fingerprint + " " + path + " 2>&1");
  INFO(ok_out);
  CHECK(ok == 0);
  CHECK_THAT(testing::ReadAll(dir.file("known_hosts")), Catch::Contains("ssh-ed25519"));
  // From now on the key is known: a plain run works.
  auto [again, again_out] = testing::RunShell(bin + " status " + path + " 2>&1");
  CHECK(again == 0);
  CHECK_THAT(again_out, Catch::Contains("1 completed"));
}

// Issue 5's acceptance: the replay of recorded Megatron-LM layouts runs on the test cluster, the
// throughput rule stops the slow layouts, and the report splits the winner's gain over the
// baseline into throughput x convergence. examples/megatron-replay.toml as shipped, run faster.
TEST_CASE("the Megatron replay sweep ranks layouts by loss versus time and the report decomposes the gain",
          "[cluster]") {
  testing::TempDir dir;
  std::string text = testing::ReadAll(std::string(SLURMSWEEP_SOURCE_DIR) + "/examples/megatron-replay.toml");
  auto replace = [&](const std::string& from, const std::string& to) {
    size_t p = text.find(from);
    REQUIRE(p != std::string::npos);
    text.replace(p, from.size(), to);
  };
  std::string src = SLURMSWEEP_SOURCE_DIR, bin = SLURMSWEEP_BINARY_DIR;
  replace("speedup = 0.1", "speedup = 0.3");
  replace("database = \"../build/megatron-replay.db\"", "database = \"" + dir.file("replay.db") + "\"");
  replace("workdir = \"/tmp/slurmsweep-megatron-replay\"", "workdir = \"" + dir.file("work") + "\"");
  replace("../templates/", src + "/templates/");
  replace("\"../build/bin/megatron_replay\"", "\"" + bin + "/bin/megatron_replay\"");
  replace("\"data/megatron-replay/cases.csv\"", "\"" + src + "/examples/data/megatron-replay/cases.csv\"");
  replace("\"data/megatron-replay/curves.csv\"", "\"" + src + "/examples/data/megatron-replay/curves.csv\"");
  replace("refresh_minutes = 0.5",
          "refresh_minutes = 0.5\nhtml = \"" + dir.file("report.html") + "\"\ncsv_dir = \"" + dir.file("csv") + "\"");
  testing::WriteAll(dir.file("replay.toml"), text);

  Harness h(dir.file("replay.toml"));
  REQUIRE(h.runner->Run(400).ok());
  INFO(h.log.str());
  CHECK(h.Trial(R"({"pp":1,"tp":1})").state == "completed");
  for (const char* slow : {R"({"pp":1,"tp":2})", R"({"pp":1,"tp":4})", R"({"pp":2,"tp":4})"}) {
    auto t = h.Trial(slow);
    CHECK(t.state == "pruned");
    CHECK_THAT(t.reason, Catch::Contains("throughput rule"));
  }
  auto report = results::CollectReport(*h.store, h.study, h.runner->study_id(), results::ReportOptionsFor(h.study),
                                       h.clock.Now());
  REQUIRE(report.ok());
  reports::Analysis a = reports::Analyze(*report);
  REQUIRE(a.recommended);
  REQUIRE(report->baseline);
  CHECK(report->trials[*a.recommended].key == h.Trial(R"({"pp":1,"tp":1})").trial_key);
  CHECK(report->trials[*report->baseline].key == h.Trial(R"({"pp":1,"tp":4})").trial_key);
  CHECK(a.ranking.front() == *a.recommended);
  REQUIRE(a.decomposition);
  // The recorded H100 iteration times: 53 ms at TP1 against 196 ms at TP4.
  CHECK(a.decomposition->throughput > 3.3);
  CHECK(a.decomposition->throughput < 4.1);
  CHECK(a.decomposition->time_to_target == Approx(a.decomposition->throughput * a.decomposition->convergence));
  CHECK(a.decomposition->time_to_target > 2);
  std::string html = testing::ReadAll(dir.file("report.html"));
  CHECK_THAT(html, Catch::Contains("time to target"));
}

// Issue 5's two-phase study, end to end on the test cluster: phase 1 screens speed, phase 2
// takes its two fastest configurations and races the convergence knobs, ranked by time to target.
TEST_CASE("a two-phase study: the race runs exactly the screen's fastest configurations x its own knobs", "[cluster]") {
  testing::TempDir dir;
  std::string src = SLURMSWEEP_SOURCE_DIR, bin = SLURMSWEEP_BINARY_DIR;
  for (const char* name : {"two-phase-screen", "two-phase-race"}) {
    std::string text = testing::ReadAll(src + "/examples/" + name + ".toml");
    auto replace = [&](const std::string& from, const std::string& to) {
      size_t p = text.find(from);
      REQUIRE(p != std::string::npos);
      text.replace(p, from.size(), to);
    };
    replace(fmt::format("database = \"../build/{}.db\"", name),
            fmt::format("database = \"{}\"", dir.file(name) + ".db"));
    replace("workdir = \"/tmp/slurmsweep-two-phase\"", "workdir = \"" + dir.file("work") + "\"");
    replace("poll_interval_s = 1", "poll_interval_s = 0.5");
    replace("../templates/", src + "/templates/");
    replace("\"../build/bin/mlp_train\"", "\"" + bin + "/bin/mlp_train\"");
    testing::WriteAll(dir.file(std::string(name) + ".toml"), text);
  }
  // Phase 2 refuses to start before phase 1 has run.
  auto early = study::LoadStudy(dir.file("two-phase-race.toml"));
  REQUIRE(early.ok());
  CHECK_FALSE(results::ExpandStudy(*early).ok());

  Harness screen(dir.file("two-phase-screen.toml"));
  REQUIRE(screen.runner->Run(300).ok());
  auto screened =
      results::CollectReport(*screen.store, screen.study, screen.runner->study_id(), {}, screen.clock.Now());
  REQUIRE(screened.ok());
  std::vector<std::pair<double, std::string>> speed;  // iter/s, "hidden=..,mbs=.."
  for (const auto& t : screened->trials) {
    REQUIRE(t.state == "completed");
    REQUIRE(t.iters_per_s);
    speed.push_back({*t.iters_per_s, fmt::format("{},{}", t.param_values[0].text, t.param_values[1].text)});
  }
  std::sort(speed.rbegin(), speed.rend());

  Harness race(dir.file("two-phase-race.toml"));
  REQUIRE(race.runner->Run(400).ok());
  INFO(race.log.str());
  auto trials = race.Trials();
  REQUIRE(trials.size() == 8);  // 2 seeds x 2 optimizers x 2 learning rates
  auto report = results::CollectReport(*race.store, race.study, race.runner->study_id(),
                                       results::ReportOptionsFor(race.study), race.clock.Now());
  REQUIRE(report.ok());
  REQUIRE(report->meta.param_names == std::vector<std::string>{"hidden", "micro_batch_size", "lr", "optimizer"});
  std::set<std::string> seeds;
  for (const auto& t : report->trials)
    seeds.insert(fmt::format("{},{}", t.param_values[0].text, t.param_values[1].text));
  CHECK(seeds == std::set<std::string>{speed[0].second, speed[1].second});
  reports::Analysis a = reports::Analyze(*report);
  REQUIRE(a.recommended);
  // Ranked by time to target: the recommendation reached it first among completed trials.
  REQUIRE(reports::TimeToTarget(report->trials[*a.recommended]));
  for (const auto& t : report->trials) {
    if (t.state == "completed" && reports::TimeToTarget(t)) {
      CHECK(*reports::TimeToTarget(t) >= *reports::TimeToTarget(report->trials[*a.recommended]));
    }
  }
  // The target comes from [stopping] target_loss; a trial the race rule stopped had trained
  // longer than the winner's time to target without reaching it.
  REQUIRE(report->target);
  CHECK(*report->target == 0.12);
  // (A job that completed before the scancel landed stays completed, and its reason says so: under
  // load a tick can come only as these 5-second jobs end.)
  for (const auto& t : trials) {
    if (t.reason.find("pruned by the race rule") == std::string::npos) continue;
    INFO(t.reason);
    bool too_late = t.state == "completed" && t.reason.find("completed before the stop took effect") == 0;
    CHECK((t.state == "pruned" || too_late));
    CHECK_THAT(t.reason, Catch::Contains("has not reached the target 0.12"));
  }
}

// Issue 7: studies of one user against one cluster share one query pace. Two studies run at once
// with query_gap_s = 3 and a fixed 0.3 s poll interval each: together they tick at most once per 3 s
// (the slots are reserved in one file), so their squeue calls are bounded by the elapsed time.
// Unpaced (query_gap_s = 0), the same two studies made 22 calls where this bound allowed 7.
TEST_CASE("two studies against one cluster share one query pace", "[cluster]") {
  testing::TempDir dir_a, dir_b;
  std::string extra_vars = "iters = 300\nsleep_ms = 40\noptimizer = \"sgd\"\nfail_at = 0\nmbs = 4\n";
  std::string a = WriteStudy(dir_a, "pace-a", "[space]\nlr = [0.01, 0.02]\n", extra_vars);
  std::string b = WriteStudy(dir_b, "pace-b", "[space]\nlr = [0.03, 0.04]\n", extra_vars);
  for (const std::string& path : {a, b}) {
    std::string text = testing::ReadAll(path);
    text.replace(text.find("poll_interval_s = 0.5"), 21,
                 "poll_interval_s = 0.3\nmax_poll_interval_s = 0.3\nquery_gap_s = 3");
    testing::WriteAll(path, text);
  }
  Harness ha(a), hb(b);
  double start = ha.clock.Now();
  Status ra, rb;
  std::thread ta([&] { ra = ha.runner->Run(400); });
  std::thread tb([&] { rb = hb.runner->Run(400); });
  ta.join();
  tb.join();
  double elapsed = ha.clock.Now() - start;
  INFO(ha.log.str() << hb.log.str());
  REQUIRE(ra.ok());
  REQUIRE(rb.ok());
  for (auto* h : {&ha, &hb}) {
    for (const auto& t : h->Trials()) CHECK(t.state == "completed");
  }
  int squeue = ha.runner->slurm_stats().squeue + hb.runner->slurm_stats().squeue;
  CHECK(ha.runner->slurm_stats().squeue > 0);
  CHECK(hb.runner->slurm_stats().squeue > 0);
  CHECK(squeue <= static_cast<int>(elapsed / 3) + 2);
}

TEST_CASE("a tpe study runs end to end as job arrays and proposes more as trials end", "[cluster]") {
  testing::TempDir dir;
  std::string path = WriteStudy(dir, "tpe",
                                "[search]\nsampler = \"tpe\"\ntrials = 7\nseed = 2\n\n[space]\noptimizer = [\"sgd\", "
                                "\"adam\"]\nlr = { min = 0.003, max = 0.1, log = true }\nmbs = [4, 8]\n",
                                "iters = 30\nsleep_ms = 0\nfail_at = 0\n", 3);
  {
    Harness h(path);
    REQUIRE(h.runner->Run(240).ok());
    auto trials = h.Trials();
    INFO(h.log.str());
    REQUIRE(trials.size() == 7);
    std::set<std::string> arrays;
    for (const auto& t : trials) {
      CHECK(t.state == "completed");
      CHECK(t.attempt == 1);
      auto params = nlohmann::json::parse(t.params_json);
      double lr = params["lr"].get<double>();
      CHECK((lr >= 0.003 && lr <= 0.1));
      auto last = h.store->LastMetric(t.id, "lm_loss");
      REQUIRE(last.ok());
      CHECK(last->has_value());
      if (!t.array_name.empty()) arrays.insert(t.array_name);
    }
    // The first three (the free slots) went as one array; the rest followed as trials ended.
    std::string first =
        testing::ReadAll(fmt::format("{}/scripts/tpe/{}.sbatch", dir.file("work"), trials[0].array_name));
    CHECK_THAT(first, Catch::Contains("#SBATCH --array=0-2%3"));
    CHECK(h.runner->slurm_stats().sbatch >= 3);
    CHECK(!arrays.empty());
  }
  // The budget is spent: a second run proposes and submits nothing.
  Harness again(path);
  REQUIRE(again.runner->Run(5).ok());
  CHECK(again.runner->slurm_stats().sbatch == 0);
  CHECK(again.Trials().size() == 7);
}

TEST_CASE("monitor = true: the job's /proc telemetry is stored once, apart from the steps, and charted", "[cluster]") {
  testing::TempDir dir;
  std::string path = WriteStudy(dir, "telemetry", "[space]\noptimizer = [\"sgd\", \"adam\"]\nlr = [0.01]\nmbs = [4]\n",
                                "iters = 30\nsleep_ms = 100\nfail_at = 0\n", 8, kTemplate, "", "");
  // [job] keys go in the [job] table: added to it, before [job.vars].
  std::string text = testing::ReadAll(path);
  text.replace(text.find("[job.vars]"), 0, "monitor = true\nmonitor_interval_s = 1\n\n");
  testing::WriteAll(path, text);
  int64_t points = 0;
  {
    Harness h(path);
    REQUIRE(h.runner->Run(240).ok());
    INFO(h.log.str());
    auto trials = h.Trials();
    REQUIRE(trials.size() == 2);
    for (const auto& t : trials) {
      CHECK(t.state == "completed");
      // The sampler ran on the node beside the trainer (which the template execs) into its own file.
      std::string file = testing::ReadAll(t.log_path + ".telemetry");
      CHECK(file.rfind("slurmsweep-telemetry 1 host=", 0) == 0);
      CHECK(t.telemetry_offset == static_cast<int64_t>(file.size()));
      auto mem = h.store->MetricSeries(t.id, "system/node/mem_used_gib");
      auto cpu = h.store->MetricSeries(t.id, "system/node/cpu_pct");
      REQUIRE(mem.ok());
      REQUIRE(cpu.ok());
      CHECK(mem->size() >= 2);  // a sample a second over a run of about 3 s
      CHECK(cpu->size() + 1 >= mem->size());
      for (const auto& p : *mem) CHECK(p.value > 0);
      for (const auto& p : *cpu) CHECK((p.value >= 0 && p.value <= 100));
      // Keyed by the sample's Unix time, within the job's run.
      REQUIRE(t.started_at);
      CHECK(mem->front().step >= static_cast<int64_t>(*t.started_at) - 2);
    }
    // The training steps are still the log's.
    auto rows = results::CollectTrialRows(*h.store, h.study, h.runner->study_id(), h.clock.Now());
    REQUIRE(rows.ok());
    for (const auto& r : *rows) CHECK(r.steps == 30);
    for (const auto& t : trials) points += h.store->CountMetrics(t.id).value();
    // The report charts it per trial.
    auto report = results::CollectReport(*h.store, h.study, h.runner->study_id(), results::ReportOptionsFor(h.study),
                                         h.clock.Now());
    REQUIRE(report.ok());
    std::string html = reports::RenderHtmlReport(*report);
    CHECK_THAT(html, Catch::Contains("<section id=\"telemetry\">"));
    CHECK_THAT(html, Catch::Contains("node memory in use"));
    for (const auto& t : trials) CHECK_THAT(html, Catch::Contains(fmt::format("id=\"tel-{}-util", t.id)));
  }
  // A restarted run reads nothing twice.
  Harness again(path);
  REQUIRE(again.runner->Run(3).ok());
  int64_t after = 0;
  for (const auto& t : again.Trials()) after += again.store->CountMetrics(t.id).value();
  CHECK(after == points);
}

TEST_CASE("repeats = 2: each configuration runs with seeds 0 and 1, ranked by its mean; --repeat-top adds a seed",
          "[cluster]") {
  testing::TempDir dir;
  std::string tmpl = kSeededTemplate;
  std::string path = WriteStudy(
      dir, "repeats", "[search]\nrepeats = 2\n\n[space]\noptimizer = [\"adam\"]\nlr = [0.003, 0.05]\nmbs = [4]\n",
      "iters = 30\nsleep_ms = 0\nfail_at = 0\n", 4, tmpl);
  Harness h(path);
  REQUIRE(h.runner->Run(240).ok());
  auto trials = h.Trials();
  INFO(h.log.str());
  REQUIRE(trials.size() == 4);
  std::map<double, std::set<int64_t>> seeds;  // lr -> seeds stored
  std::map<double, std::vector<double>> finals;
  auto rows = results::CollectTrialRows(*h.store, h.study, h.runner->study_id(), h.clock.Now());
  REQUIRE(rows.ok());
  for (size_t i = 0; i < trials.size(); ++i) {
    const auto& t = trials[i];
    CHECK(t.state == "completed");
    auto params = nlohmann::json::parse(t.params_json);
    seeds[params["lr"].get<double>()].insert(params["seed"].get<int64_t>());
    // The seed reached the program: mlp_train logs its arguments.
    CHECK_THAT(testing::ReadAll(t.log_path),
               Catch::Contains(fmt::format("  seed {} {}\n", std::string(44, '.'), params["seed"].get<int64_t>())));
    REQUIRE((*rows)[i].objective_value);
    finals[params["lr"].get<double>()].push_back(*(*rows)[i].objective_value);
  }
  CHECK(seeds[0.003] == std::set<int64_t>{0, 1});
  CHECK(seeds[0.05] == std::set<int64_t>{0, 1});
  // Two seeds of one configuration are two runs, not one run twice.
  CHECK(finals[0.05][0] != finals[0.05][1]);

  // The report ranks configurations by their mean over the two seeds.
  auto report = results::CollectReport(*h.store, h.study, h.runner->study_id(), results::ReportOptionsFor(h.study),
                                       h.clock.Now());
  REQUIRE(report.ok());
  REQUIRE(report->configs);
  REQUIRE(report->configs->groups.size() == 2);
  double mean_a = (finals[0.003][0] + finals[0.003][1]) / 2, mean_b = (finals[0.05][0] + finals[0.05][1]) / 2;
  const auto& best = report->configs->groups[0];
  CHECK(best.param_values[0] == (mean_a < mean_b ? "0.003" : "0.05"));
  CHECK(*best.mean == Approx(std::min(mean_a, mean_b)));
  CHECK(*report->configs->groups[1].mean == Approx(std::max(mean_a, mean_b)));
  REQUIRE(results::WriteReports(*h.store, h.study, h.runner->study_id(), dir.file("r.html"), dir.file("csv"),
                                h.clock.Now(), results::ReportOptionsFor(h.study))
              .ok());
  std::string configs = testing::ReadAll(dir.file("csv/configs.csv"));
  CHECK(configs.rfind("rank,lr,mbs,optimizer,repeats,completed,mean,std,min,max,seeds,trial_keys,sem\n1,", 0) == 0);
  CHECK_THAT(testing::ReadAll(dir.file("csv/trials.csv")), Catch::Contains(",lr,mbs,optimizer,seed,state,"));
  CHECK_THAT(testing::ReadAll(dir.file("r.html")), Catch::Contains("Configurations over seeds"));

  // --repeat-top 1 --repeats 3: the best configuration gets seed 2; nothing else runs again.
  auto added = run::RepeatTop(*h.store, h.study, 1, 3, h.clock.Now());
  REQUIRE(added.ok());
  Harness more(path);
  REQUIRE(more.runner->Run(240).ok());
  auto after = more.Trials();
  REQUIRE(after.size() == 5);
  CHECK(more.runner->slurm_stats().sbatch == 1);
  auto extra = nlohmann::json::parse(after.back().params_json);
  CHECK(extra["seed"] == 2);
  CHECK(extra["lr"].get<double>() == (mean_a < mean_b ? 0.003 : 0.05));
  CHECK(after.back().state == "completed");
  auto ranked = results::CollectReport(*more.store, more.study, more.runner->study_id(),
                                       results::ReportOptionsFor(more.study), more.clock.Now());
  REQUIRE(ranked.ok());
  CHECK(ranked->configs->groups.size() == 2);
  CHECK(ranked->configs->groups[0].rows.size() + ranked->configs->groups[1].rows.size() == 5);
}

TEST_CASE("repeats = 3: the recommendation, runner-up and baseline are configurations in the report and status --json",
          "[cluster]") {
  // Issue 41: the report recommended the best single seed, its runner-up was the same
  // configuration with another seed, and the baseline was compared seed against seed.
  testing::TempDir dir;
  std::string tmpl = kSeededTemplate;
  std::string path = WriteStudy(dir, "config-decisions",
                                "[search]\nrepeats = 3\n\n[space]\noptimizer = [\"adam\"]\nlr = [0.003, 0.03, 0.1]\n"
                                "mbs = [4]\n\n[report]\nbaseline = { lr = 0.003, mbs = 4, optimizer = \"adam\" }\n",
                                "iters = 40\nsleep_ms = 10\nfail_at = 0\n", 4, tmpl);
  Harness h(path);
  REQUIRE(h.runner->Run(300).ok());
  INFO(h.log.str());
  auto rows = results::CollectTrialRows(*h.store, h.study, h.runner->study_id(), h.clock.Now());
  REQUIRE(rows.ok());
  REQUIRE(rows->size() == 9);
  // Each configuration's mean over its three seeds, from the stored values.
  std::map<std::string, std::vector<double>> finals;  // lr -> final values
  for (const auto& r : *rows) {
    REQUIRE(r.state == "completed");
    REQUIRE(r.objective_value);
    finals[r.param_values[0].text].push_back(*r.objective_value);
  }
  std::vector<std::pair<double, std::string>> by_mean;
  for (const auto& [lr, v] : finals) {
    REQUIRE(v.size() == 3);
    by_mean.push_back({(v[0] + v[1] + v[2]) / 3, lr});
  }
  std::sort(by_mean.begin(), by_mean.end());
  const std::string best = by_mean[0].second, second = by_mean[1].second;
  const auto& bv = finals[best];
  double mean = by_mean[0].first, ss = 0;
  for (double v : bv) ss += (v - mean) * (v - mean);
  const double sem = std::sqrt(ss / 2) / std::sqrt(3.0);

  // The HTML report's headline.
  std::string html_path = dir.file("r.html");
  REQUIRE(results::WriteReports(*h.store, h.study, h.runner->study_id(), html_path, dir.file("csv"), h.clock.Now(),
                                results::ReportOptionsFor(h.study))
              .ok());
  std::string html = testing::ReadAll(html_path);
  size_t at = html.find("<section id=\"recommendation\"");
  REQUIRE(at != std::string::npos);
  std::string head = html.substr(at, html.find("</section>", at) - at);
  INFO(head);
  CHECK_THAT(head, Catch::Contains(fmt::format("Use <strong>lr={} mbs=4 optimizer=adam</strong>", best)));
  CHECK_THAT(head, Catch::Contains("(n = 3)"));
  CHECK_THAT(head, Catch::Contains(fmt::format("runner-up configuration lr={} mbs=4 optimizer=adam", second)));
  CHECK(head.find("seed=") == std::string::npos);  // no single seed is named
  if (best == "0.003") {
    CHECK_THAT(head, Catch::Contains("This is the baseline configuration"));
  } else {
    CHECK_THAT(head, Catch::Contains("baseline configuration lr=0.003") ||
                         Catch::Contains("Baseline: <strong>lr=0.003 mbs=4 optimizer=adam</strong>"));
  }
  CHECK_THAT(head, Catch::Contains("Welch's t test") || Catch::Contains("cannot be told apart yet"));
  CHECK_THAT(testing::ReadAll(dir.file("csv/configs.csv")),
             Catch::StartsWith("rank,lr,mbs,optimizer,repeats,completed,mean,std,min,max,seeds,trial_keys,sem\n1," +
                               best + ",4,adam,3,3,"));

  // status --json: the same decisions.
  std::string bin = std::string(SLURMSWEEP_BINARY_DIR) + "/bin/slurmsweep";
  auto [rc, out] = testing::RunShell(bin + " status --json " + path + " 2>/dev/null");
  REQUIRE(rc == 0);
  auto j = nlohmann::json::parse(out, nullptr, false);
  REQUIRE(j.is_object());
  const auto& c = j["configurations"];
  INFO(c.dump(1));
  CHECK(c["recommendation"]["params"]["lr"].get<double>() == std::stod(best));
  CHECK(c["recommendation"]["completed"] == 3);
  CHECK(c["recommendation"]["mean"].get<double>() == Approx(mean));
  CHECK(c["recommendation"]["sem"].get<double>() == Approx(sem));
  CHECK(!c["recommendation"]["params"].contains("seed"));
  CHECK(c["runner_up"]["params"]["lr"].get<double>() == std::stod(second));
  CHECK(c["baseline"]["params"]["lr"].get<double>() == 0.003);
  CHECK(c["baseline"]["completed"] == 3);
  CHECK(c["baseline"]["is_recommendation"] == (best == "0.003"));
  CHECK(c["separability"]["test"] == "welch");
  CHECK(c["separability"]["p"].is_number());
  // `status`'s text: configurations with their standard errors, the baseline marked, Welch's test.
  auto [text_rc, text] = testing::RunShell(bin + " status " + path + " 2>&1");
  INFO(text);
  CHECK(text_rc == 0);
  CHECK_THAT(text, Catch::Contains("± the standard error of the mean"));
  CHECK_THAT(text, Catch::Contains("[baseline]"));
  CHECK_THAT(text, Catch::Contains("Welch's t test") || Catch::Contains("cannot be told apart yet"));
}
