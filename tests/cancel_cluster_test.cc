// `cancel` right after `run --detach` (issue 41): the detached run is still connecting and has
// submitted nothing when `cancel` comes, so `cancel` alone finds nothing to scancel. It records a
// request the starting run obeys before it submits (run/cancel_request.h), and waits for its
// answer. Through the built binary over SSH on the real lab. Tagged [cluster].
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <signal.h>

#include <chrono>
#include <string>
#include <thread>

#include "store/store.h"
#include "tests/cluster_harness.h"
#include "tests/test_util.h"

using namespace sweep;

namespace {

const std::string kBinary = std::string(SLURMSWEEP_BINARY_DIR) + "/bin/slurmsweep";

// Eight trials that would each run for minutes: any of them submitted and not cancelled shows.
std::string WriteSlowStudy(const testing::TempDir& dir, const std::string& name) {
  testing::WriteAll(dir.file("job.sbatch"),
                    "#!/bin/bash\nexec {{workdir}}/mlp_train --lr {{lr}} --hidden 16 --train-iters 100000 "
                    "--log-interval 5 --sleep-ms 20\n");
  testing::WriteAll(dir.file("study.toml"),
                    fmt::format("[study]\nname = \"{}\"\n\n[cluster]\ntransport = \"ssh\"\n{}partition = \"{}\"\n"
                                "workdir = \"{}\"\nmax_concurrent = 8\npoll_interval_s = 0.5\n\n"
                                "[job]\ntemplate = \"job.sbatch\"\ncpus_per_task = 1\nmem = \"200M\"\n"
                                "time_limit = \"00:05:00\"\nstage = [\"{}/bin/mlp_train\"]\n\n"
                                "[space]\nlr = [0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08]\n",
                                name, testing::LabSshLogin(), testing::ClusterVar("SLURMSWEEP_PARTITION"),
                                dir.file("work"), SLURMSWEEP_BINARY_DIR));
  return dir.file("study.toml");
}

}  // namespace

TEST_CASE("cancel right after run --detach wins: the starting run submits nothing it does not cancel", "[cluster]") {
  testing::TempDir dir;
  const std::string name = "detachcancel";
  std::string path = WriteSlowStudy(dir, name);
  auto [rc, detached] = testing::RunShell(kBinary + " run --detach " + path + " 2>&1");
  INFO(detached);
  REQUIRE(rc == 0);
  REQUIRE_THAT(detached, Catch::Contains("running in the background as pid"));
  pid_t child = std::stoi(detached.substr(detached.find(" as pid ") + 8));
  // At once, as a user who changed their mind: the child is still connecting over SSH.
  auto [crc, cancelled] = testing::RunShell(kBinary + " cancel --wait 60 " + path + " 2>&1");
  INFO(cancelled);
  CHECK(crc == 0);
  CHECK_THAT(cancelled, Catch::Contains("a run of this study is going on") && Catch::Contains("asked it to cancel"));
  CHECK_THAT(cancelled, Catch::Contains(fmt::format("the run going on (pid {}) cancelled", child)));

  // The run ends by itself once its trials have; every trial is cancelled, none ran on.
  for (int i = 0; i < 240 && kill(child, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(500));
  REQUIRE(kill(child, 0) != 0);
  std::string log = testing::ReadAll(dir.file(name + ".db.log"));
  INFO(log);
  CHECK_THAT(log, Catch::Contains("at the request of `slurmsweep cancel`") && Catch::Contains("every trial has ended"));
  auto db = store::Store::OpenReadOnly(dir.file(name + ".db"));
  REQUIRE(db.ok());
  auto study = (*db)->GetStudy(name);
  REQUIRE(study.ok());
  auto trials = (*db)->ListTrials(study->id);
  REQUIRE(trials.ok());
  CHECK(trials->size() == 8);
  for (const auto& t : *trials) {
    INFO(t.trial_key << " " << t.state << " " << t.reason);
    CHECK(t.state == "cancelled");
  }
  // Nothing of the study is left queued or running on Slurm.
  std::string queue = testing::Capture(
      fmt::format("SLURM_CONF={} squeue -h -o %j | grep -c ss-{}- || true", testing::ClusterVar("SLURM_CONF"), name));
  CHECK(std::stoi(queue) == 0);

  // The request was this run's: a later run is not cancelled by it (it finds every trial ended and
  // submits nothing, as for any finished study).
  auto [again_rc, again] = testing::RunShell(kBinary + " run --max-ticks 3 " + path + " 2>&1");
  INFO(again);
  CHECK_THAT(again, Catch::Contains("slurm commands: 0 sbatch") && !Catch::Contains("at the request of"));
}
