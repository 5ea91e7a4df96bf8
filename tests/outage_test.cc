// Outages on the real test cluster: sshd gone for 30 s mid-run, a node's link cut mid-job.
// Tagged [outage]: they disturb the shared cluster, so CTest runs them after the others.
#include <catch2/catch.hpp>

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <thread>

#include "base/clock.h"
#include "run/connect.h"
#include "run/runner.h"
#include "study/study.h"
#include "store/store.h"
#include "tests/cluster_harness.h"
#include "tests/test_util.h"

using namespace sweep;
using testing::Harness;

namespace {

std::string SshStudy(const testing::TempDir& dir, const std::string& name, const std::string& tmpl,
                     const std::string& space, const std::string& extra) {
  testing::WriteAll(dir.file("job.sbatch"), tmpl);
  std::string text = fmt::format(R"([study]
name = "{}"

[cluster]
transport = "ssh"
{}partition = "{}"
workdir = "{}"
max_concurrent = 4
poll_interval_s = 0.5

[job]
template = "job.sbatch"
cpus_per_task = 1
mem = "100M"
stage = ["{}/bin/mlp_train"]

{}

{}
)",
                                 name, testing::LabSshLogin(), testing::ClusterVar("SLURMSWEEP_PARTITION"),
                                 dir.file("work"), SLURMSWEEP_BINARY_DIR, extra, space);
  testing::WriteAll(dir.file("study.toml"), text);
  return dir.file("study.toml");
}

// Stops the lab's sshd and every session it serves (ours included), then starts it again
// after `seconds`, with the same configuration and host key.
void SshdOutage(double seconds) {
  std::string lab = testing::ClusterVar("SLURMSWEEP_LAB");
  std::string pid = testing::ReadAll(lab + "/run/sshd.pid");
  REQUIRE_FALSE(pid.empty());
  int master = std::stoi(pid);
  testing::Capture(fmt::format("pkill -KILL -P {}; kill -KILL {}", master, master));
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  int rc = std::system((lab + "/bin/start-sshd").c_str());  // as tests/cluster/start.sh started it
  REQUIRE(rc == 0);
}

// Every trial completed with its whole curve: `loss_points` lm_loss points, none lost or doubled.
void CheckAllCompleted(Harness& h, size_t loss_points) {
  for (const auto& t : h.Trials()) {
    INFO(t.trial_key << " " << t.state << " " << t.reason);
    CHECK(t.state == "completed");
    CHECK(testing::CountPoints(*h.store, t.id, "lm_loss") == loss_points);
  }
}

constexpr const char* kTrain = R"(#!/bin/bash
exec {{workdir}}/mlp_train --micro-batch-size 4 --lr {{lr}} --optimizer sgd --hidden 16 \
  --train-iters {{iters}} --log-interval 5 --sleep-ms {{sleep_ms}}
)";

}  // namespace

TEST_CASE("sshd down for 30 s mid-run: the run goes on when it returns and loses nothing", "[outage]") {
  testing::TempDir dir;
  std::string path = SshStudy(dir, "sshdown", kTrain, "[space]\nlr = [0.01, 0.02, 0.03]\n",
                              "[job.vars]\niters = 400\nsleep_ms = 100\n");
  Harness h(path);
  Status result;
  std::thread loop([&] { result = h.runner->Run(600); });
  // Wait until the jobs run and some metrics are in, then cut the link.
  bool running = testing::WaitForStudy(h.study.database, h.study.name, 60, [](const auto& trials, const auto&) {
    return testing::AnyTrialIn(trials, "running");
  });
  REQUIRE(running);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  SshdOutage(30);
  loop.join();
  INFO(h.log.str());
  REQUIRE(result.ok());
  CHECK_THAT(h.log.str(), Catch::Contains("cluster unreachable, will retry"));
  CheckAllCompleted(h, 80);
}

TEST_CASE("a node dies mid-job: the trial ends as node failure, is retried per policy and completes", "[outage]") {
  testing::TempDir dir;
  // --no-requeue: Slurm must not requeue on its own, so the end is NODE_FAIL and ours to retry.
  std::string tmpl = std::string("#!/bin/bash\n#SBATCH --no-requeue\n") + (kTrain + std::string(kTrain).find('\n') + 1);
  std::string path = SshStudy(dir, "nodefail", tmpl, "[space]\nlr = [0.01]\n",
                              "[job.vars]\niters = 300\nsleep_ms = 100\n\n[retry]\nnode_fail = 1\n");
  Harness h(path);
  Status result;
  std::thread loop([&] { result = h.runner->Run(900); });
  std::string job;
  REQUIRE(testing::WaitForStudy(h.study.database, h.study.name, 60, [&](const auto& trials, const auto&) {
    if (!testing::AnyTrialIn(trials, "running")) return false;
    job = trials[0].job_id;
    return true;
  }));
  std::string node = testing::Capture(
      fmt::format("SLURM_CONF={} squeue -h -t running -j {} -o %N", testing::ClusterVar("SLURM_CONF"), job));
  while (!node.empty() && (node.back() == '\n' || node.back() == ' ')) node.pop_back();
  REQUIRE_FALSE(node.empty());
  std::string prefix = testing::ClusterEnv()["SLURMSWEEP_NET_PREFIX"];
  std::string link = (prefix.empty() ? "sslab" : prefix) + "-" + node;
  REQUIRE(std::system(("ip link set " + link + " down").c_str()) == 0);
  // Bring the link back once Slurm has declared the node dead, so the retry has somewhere to run.
  bool failed = testing::WaitForStudy(h.study.database, h.study.name, 90, [](const auto&, const auto& events) {
    for (const auto& e : events)
      if (e.kind == "retry") return true;
    return false;
  });
  REQUIRE(std::system(("ip link set " + link + " up").c_str()) == 0);
  loop.join();
  INFO(h.log.str());
  REQUIRE(failed);
  REQUIRE(result.ok());
  auto trials = h.Trials();
  REQUIRE(trials.size() == 1);
  CHECK(trials[0].state == "completed");
  CHECK(trials[0].attempt == 2);
  CHECK(trials[0].prior_run_s > 0);  // the dead attempt's run time is part of the trial's cost
  CHECK_THAT(h.log.str(), Catch::Contains("retrying (1 of 1)"));
  // The retry started from scratch: one full curve, none of the dead attempt's points mixed in.
  CHECK(testing::CountPoints(*h.store, trials[0].id, "lm_loss") == 60);
}

TEST_CASE("slurmctld restarts mid-run: nothing is marked while it is away and the sweep completes", "[outage]") {
  testing::TempDir dir;
  std::string path =
      SshStudy(dir, "ctldrestart", kTrain, "[space]\nlr = [0.01, 0.02]\n", "[job.vars]\niters = 200\nsleep_ms = 100\n");
  Harness h(path);
  Status result;
  std::thread loop([&] { result = h.runner->Run(600); });
  REQUIRE(testing::WaitForStudy(h.study.database, h.study.name, 60, [](const auto& trials, const auto&) {
    return testing::AnyTrialIn(trials, "running");
  }));
  // Stop the controller (state is saved in StateSaveLocation), keep it away, start it again as
  // tests/cluster/start.sh did (its own UTS namespace named after SlurmctldHost, the lab's Slurm version).
  std::string lab = testing::ClusterVar("SLURMSWEEP_LAB");
  int pid = std::stoi(testing::ReadAll(lab + "/run/slurmctld.pid"));
  kill(pid, SIGTERM);
  for (int i = 0; i < 100 && kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  // Longer than a Slurm client keeps retrying a refused connection (a few MessageTimeouts): a
  // tick must see the controller gone, not just a slow squeue.
  std::this_thread::sleep_for(std::chrono::seconds(20));
  REQUIRE(std::system((lab + "/bin/start-slurmctld").c_str()) == 0);
  loop.join();
  INFO(h.log.str());
  REQUIRE(result.ok());
  CHECK_THAT(h.log.str(), Catch::Contains("cluster unreachable, will retry"));
  CheckAllCompleted(h, 40);
}
