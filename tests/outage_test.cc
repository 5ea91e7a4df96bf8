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
#include "orchestrator/connect.h"
#include "orchestrator/runner.h"
#include "orchestrator/study.h"
#include "store/store.h"
#include "tests/test_util.h"

using namespace sweep;

namespace {

std::string Env(const std::string& key) {
  auto env = testing::ClusterEnv();
  auto it = env.find(key);
  if (it == env.end()) FAIL("test cluster not running (no " << key << "); run tests/cluster/start.sh");
  return it->second;
}

std::string Capture(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  pclose(p);
  return out;
}

std::string SshStudy(const testing::TempDir& dir, const std::string& name, const std::string& tmpl,
                     const std::string& space, const std::string& extra) {
  testing::WriteAll(dir.file("job.sbatch"), tmpl);
  std::string text = fmt::format(R"([study]
name = "{}"

[cluster]
transport = "ssh"
host = "{}"
port = {}
user = "{}"
identity_file = "{}"
known_hosts = "{}"
partition = "{}"
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
                                 name, Env("SLURMSWEEP_SSH_HOST"), Env("SLURMSWEEP_SSH_PORT"),
                                 Env("SLURMSWEEP_SSH_USER"), Env("SLURMSWEEP_SSH_KEY"),
                                 Env("SLURMSWEEP_SSH_KNOWN_HOSTS"), Env("SLURMSWEEP_PARTITION"), dir.file("work"),
                                 SLURMSWEEP_BINARY_DIR, extra, space);
  testing::WriteAll(dir.file("study.toml"), text);
  return dir.file("study.toml");
}

struct Harness {
  Study study;
  std::unique_ptr<store::Store> store;
  std::unique_ptr<slurm::Transport> transport;
  SystemClock clock;
  std::ostringstream log;
  std::unique_ptr<Runner> runner;

  explicit Harness(const std::string& path) {
    auto s = LoadStudy(path);
    REQUIRE(s.ok());
    study = std::move(*s);
    auto st = store::Store::Open(study.database);
    REQUIRE(st.ok());
    store = std::move(*st);
    auto t = OpenTransport(study.cluster);
    REQUIRE(t.ok());
    transport = std::move(*t);
    runner = std::make_unique<Runner>(study, *store, *transport, clock, log);
  }
  std::vector<store::TrialRecord> Trials() {
    auto t = store->ListTrials(runner->study_id());
    REQUIRE(t.ok());
    return *t;
  }
};

// Stops the lab's sshd and every session it serves (ours included), then starts it again
// after `seconds`, with the same configuration and host key.
void SshdOutage(double seconds) {
  std::string lab = Env("SLURMSWEEP_LAB");
  std::string pid = testing::ReadAll(lab + "/run/sshd.pid");
  REQUIRE_FALSE(pid.empty());
  int master = std::stoi(pid);
  Capture(fmt::format("pkill -KILL -P {}; kill -KILL {}", master, master));
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  int rc = std::system(
      fmt::format("/usr/sbin/sshd -f {}/ssh/sshd_config -E {}/log/sshd.log", lab, lab).c_str());
  REQUIRE(rc == 0);
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
  bool running = false;
  for (int i = 0; i < 120 && !running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    running = h.log.str().find("-> running") != std::string::npos;
  }
  REQUIRE(running);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  SshdOutage(30);
  loop.join();
  INFO(h.log.str());
  REQUIRE(result.ok());
  CHECK_THAT(h.log.str(), Catch::Contains("cluster unreachable, will retry"));
  for (const auto& t : h.Trials()) {
    CHECK(t.state == "completed");
    auto rows = h.store->Metrics(t.id);
    REQUIRE(rows.ok());
    CHECK(std::count_if(rows->begin(), rows->end(), [](const auto& m) { return m.name == "lm_loss"; }) == 80);
  }
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
  std::string node;
  for (int i = 0; i < 120 && node.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    auto trials = h.Trials();
    if (trials.empty() || trials[0].job_id.empty()) continue;
    node = Capture(fmt::format("SLURM_CONF={} squeue -h -t running -j {} -o %N", Env("SLURM_CONF"), trials[0].job_id));
    while (!node.empty() && (node.back() == '\n' || node.back() == ' ')) node.pop_back();
  }
  REQUIRE_FALSE(node.empty());
  std::string prefix = testing::ClusterEnv()["SLURMSWEEP_NET_PREFIX"];
  std::string link = (prefix.empty() ? "sslab" : prefix) + "-" + node;
  REQUIRE(std::system(("ip link set " + link + " down").c_str()) == 0);
  // Bring the link back once Slurm has declared the node dead, so the retry has somewhere to run.
  bool failed = false;
  for (int i = 0; i < 180 && !failed; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    failed = h.log.str().find("node_fail") != std::string::npos;
  }
  REQUIRE(std::system(("ip link set " + link + " up").c_str()) == 0);
  loop.join();
  INFO(h.log.str());
  REQUIRE(failed);
  REQUIRE(result.ok());
  auto trials = h.Trials();
  REQUIRE(trials.size() == 1);
  CHECK(trials[0].state == "completed");
  CHECK(trials[0].attempt == 2);
  CHECK_THAT(h.log.str(), Catch::Contains("retrying (1 of 1)"));
  auto rows = h.store->Metrics(trials[0].id);
  REQUIRE(rows.ok());
  // The retry started from scratch: one full curve, none of the dead attempt's points mixed in.
  CHECK(std::count_if(rows->begin(), rows->end(), [](const auto& m) { return m.name == "lm_loss"; }) == 60);
}

TEST_CASE("slurmctld restarts mid-run: nothing is marked while it is away and the sweep completes", "[outage]") {
  testing::TempDir dir;
  std::string path = SshStudy(dir, "ctldrestart", kTrain, "[space]\nlr = [0.01, 0.02]\n",
                              "[job.vars]\niters = 200\nsleep_ms = 100\n");
  Harness h(path);
  Status result;
  std::thread loop([&] { result = h.runner->Run(600); });
  bool running = false;
  for (int i = 0; i < 120 && !running; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    running = h.log.str().find("-> running") != std::string::npos;
  }
  REQUIRE(running);
  // Stop the controller (state is saved in StateSaveLocation), keep it away, start it again as
  // tests/cluster/start.sh does: its own UTS namespace named after SlurmctldHost.
  std::string lab = Env("SLURMSWEEP_LAB");
  std::string conf = Env("SLURM_CONF");
  int pid = std::stoi(testing::ReadAll(lab + "/run/slurmctld.pid"));
  kill(pid, SIGTERM);
  for (int i = 0; i < 100 && kill(pid, 0) == 0; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::this_thread::sleep_for(std::chrono::seconds(8));
  std::string host = Capture(fmt::format("sed -n 's/^SlurmctldHost=\\([^(]*\\).*/\\1/p' {}", conf));
  while (!host.empty() && host.back() == '\n') host.pop_back();
  REQUIRE(std::system(fmt::format("SLURM_CONF={} unshare --uts sh -c 'hostname {} && exec slurmctld -f {}'", conf,
                                  host, conf)
                          .c_str()) == 0);
  loop.join();
  INFO(h.log.str());
  REQUIRE(result.ok());
  CHECK_THAT(h.log.str(), Catch::Contains("cluster unreachable, will retry"));
  for (const auto& t : h.Trials()) {
    CHECK(t.state == "completed");
    auto rows = h.store->Metrics(t.id);
    REQUIRE(rows.ok());
    CHECK(std::count_if(rows->begin(), rows->end(), [](const auto& m) { return m.name == "lm_loss"; }) == 40);
  }
}
