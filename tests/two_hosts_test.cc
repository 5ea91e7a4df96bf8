// Two "login nodes" controlling one study (run/lease.h): each is a mount namespace of
// its own with its own host name, which mounts the study's directory over sshfs (through the
// lab's sshd), so each has its own FUSE cache and its own locks, as two hosts sharing a network
// filesystem do. Needs root (unshare, FUSE) and the lab: tag [cluster].
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <set>
#include <string>

#include "store/store.h"
#include "tests/cluster_harness.h"
#include "tests/test_util.h"

using namespace sweep;
namespace fs = std::filesystem;

namespace {

constexpr int kTrials = 4;

// The study: 4 trials of a few seconds, two at a time, one sbatch each (no arrays: one job per
// trial, so jobs are counted by name), lease_timeout_s short so the takeover test is quick.
void WriteSharedStudy(const std::string& shared, const std::string& name) {
  testing::WriteAll(shared + "/job.sbatch", R"(#!/bin/bash
set -euo pipefail
exec {{workdir}}/mlp_train --micro-batch-size 4 --lr {{lr}} --optimizer sgd --hidden 16 --train-iters 20 \
  --log-interval 5 --sleep-ms 150
)");
  testing::WriteAll(shared + "/study.toml",
                    fmt::format(R"([study]
name = "{name}"
lease_timeout_s = 4

[cluster]
transport = "ssh"
host = "{host}"
port = {port}
user = "{user}"
identity_file = "{key}"
known_hosts = "{known}"
partition = "{partition}"
workdir = "{shared}/work"
max_concurrent = 2
queue_ahead = 0
arrays = false
poll_interval_s = 0.5
max_poll_interval_s = 1

[job]
template = "job.sbatch"
cpus_per_task = 1
mem = "200M"
time_limit = "00:05:00"
stage = ["{bin}/bin/mlp_train"]

[space]
lr = [0.01, 0.02, 0.03, 0.04]
)",
                                fmt::arg("name", name), fmt::arg("host", testing::ClusterVar("SLURMSWEEP_SSH_HOST")),
                                fmt::arg("port", testing::ClusterVar("SLURMSWEEP_SSH_PORT")),
                                fmt::arg("user", testing::ClusterVar("SLURMSWEEP_SSH_USER")),
                                fmt::arg("key", testing::ClusterVar("SLURMSWEEP_SSH_KEY")),
                                fmt::arg("known", testing::ClusterVar("SLURMSWEEP_SSH_KNOWN_HOSTS")),
                                fmt::arg("partition", testing::ClusterVar("SLURMSWEEP_PARTITION")),
                                fmt::arg("shared", shared), fmt::arg("bin", SLURMSWEEP_BINARY_DIR)));
}

// The shell command that runs `slurmsweep run` as host `host`: a mount namespace and UTS namespace
// of its own, `shared` mounted over sshfs at `mnt`, unmounted again when the run ends. Writes the
// run's pid to `pid_file` (the shell execs nothing: the run is its child, and its exit code is the
// command's).
std::string OnHost(const std::string& host, const std::string& shared, const std::string& mnt,
                   const std::string& pid_file, const std::string& out_file) {
  std::string sshfs =
      fmt::format("sshfs -o IdentityFile={},UserKnownHostsFile={},port={},StrictHostKeyChecking=yes {}@{}:{} {}",
                  testing::ClusterVar("SLURMSWEEP_SSH_KEY"), testing::ClusterVar("SLURMSWEEP_SSH_KNOWN_HOSTS"),
                  testing::ClusterVar("SLURMSWEEP_SSH_PORT"), testing::ClusterVar("SLURMSWEEP_SSH_USER"),
                  testing::ClusterVar("SLURMSWEEP_SSH_HOST"), shared, mnt);
  std::string script = fmt::format(
      "mount --make-rprivate / && hostname {host} && {sshfs} || exit 97; "
      "{bin}/bin/slurmsweep run {mnt}/study.toml >{out} 2>&1 & echo $! >{pid}; wait $!; code=$?; "
      "fusermount3 -u {mnt}; exit $code",
      fmt::arg("host", host), fmt::arg("sshfs", sshfs), fmt::arg("bin", SLURMSWEEP_BINARY_DIR), fmt::arg("mnt", mnt),
      fmt::arg("out", out_file), fmt::arg("pid", pid_file));
  return "unshare -m -u sh -c '" + script + "'";
}

// Starts OnHost in the background; its pid (of unshare's shell).
pid_t Start(const std::string& command) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

int Wait(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The jobs Slurm has of the study (the lab keeps ended jobs in squeue for 5 minutes): name -> count.
std::map<std::string, int> JobsByName(const std::string& study) {
  std::string out =
      testing::Capture(fmt::format("SLURM_CONF={} squeue -h -t all -o %j", testing::ClusterVar("SLURM_CONF")));
  std::map<std::string, int> jobs;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("ss-" + study + "-", 0) == 0) ++jobs[line];
  return jobs;
}

// Waits until the study's database (read on the server side) has a lease held by `pid`.
bool WaitForLease(const std::string& db, const std::string& pid_file) {
  for (int i = 0; i < 240; ++i) {
    std::string pid = testing::ReadAll(pid_file);
    auto store = store::Store::OpenReadOnly(db);
    if (store.ok() && !pid.empty()) {
      auto lease = (*store)->ReadLease();
      if (lease.ok() && *lease && std::to_string((*lease)->pid) == pid.substr(0, pid.find('\n'))) return true;
    }
    ::usleep(250000);
  }
  return false;
}

struct SharedStudy {
  testing::TempDir dir;
  std::string shared, mnt;
  explicit SharedStudy(const std::string& name) : shared(dir.file("shared")), mnt(dir.file("mnt")) {
    fs::create_directories(shared);
    fs::create_directories(mnt);
    WriteSharedStudy(shared, name);
  }
};

}  // namespace

TEST_CASE("two hosts on one shared study: the second run is refused naming the first, every trial runs once",
          "[cluster][twohosts]") {
  SharedStudy s("twohosts");
  pid_t first = Start(OnHost("login1", s.shared, s.mnt, s.dir.file("pid1"), s.dir.file("out1")));
  REQUIRE(WaitForLease(s.shared + "/twohosts.db", s.dir.file("pid1")));
  std::string pid1 = testing::ReadAll(s.dir.file("pid1"));
  pid1 = pid1.substr(0, pid1.find('\n'));

  // The second login node: its own mount, cache and locks; the first's flock does not reach it.
  auto [code2, ignored] = testing::RunShell(OnHost("login2", s.shared, s.mnt, s.dir.file("pid2"), s.dir.file("out2")));
  std::string out2 = testing::ReadAll(s.dir.file("out2"));
  INFO(out2);
  CHECK(code2 != 0);
  CHECK_THAT(out2,
             Catch::Contains("another slurmsweep run controls this study: host login1, pid " + pid1 + ", heartbeat") &&
                 Catch::Contains("ssh login1 kill " + pid1));
  // A database on a FUSE mount gets a rollback journal, and says so once.
  CHECK_THAT(out2, Catch::Contains("network filesystem (fuse)"));

  CHECK(Wait(first) == 0);
  std::string out1 = testing::ReadAll(s.dir.file("out1"));
  INFO(out1);
  CHECK_THAT(out1, Catch::Contains("using a rollback journal instead of write-ahead logging"));
  CHECK_FALSE(fs::exists(s.shared + "/twohosts.db-wal"));
  auto db = store::Store::OpenReadOnly(s.shared + "/twohosts.db");
  REQUIRE(db.ok());
  auto study = (*db)->GetStudy("twohosts");
  REQUIRE(study.ok());
  auto trials = (*db)->ListTrials(study->id);
  REQUIRE(trials.ok());
  REQUIRE(trials->size() == kTrials);
  for (const auto& t : *trials) CHECK(t.state == "completed");
  // Exactly once: one job per trial in Slurm, whoever submitted it.
  auto jobs = JobsByName("twohosts");
  CHECK(jobs.size() == kTrials);
  for (const auto& [name, n] : jobs) CHECK(n == 1);
  // The run released its lease: nobody controls the study now.
  auto lease = (*db)->ReadLease();
  REQUIRE(lease.ok());
  CHECK_FALSE(lease->has_value());
}

TEST_CASE("two hosts: after kill -9 of the first run, the second takes over once its heartbeat is lease_timeout_s old",
          "[cluster][twohosts]") {
  SharedStudy s("takeover");
  pid_t first = Start(OnHost("login1", s.shared, s.mnt, s.dir.file("pid1"), s.dir.file("out1")));
  REQUIRE(WaitForLease(s.shared + "/takeover.db", s.dir.file("pid1")));
  std::string pid1 = testing::ReadAll(s.dir.file("pid1"));
  pid1 = pid1.substr(0, pid1.find('\n'));
  // Let it submit some trials, then kill it where it stands.
  REQUIRE(testing::WaitForStudy(s.shared + "/takeover.db", "takeover", 120, [](const auto& trials, const auto&) {
    return std::any_of(trials.begin(), trials.end(), [](const auto& t) { return !t.job_id.empty(); });
  }));
  REQUIRE(::kill(std::stoi(pid1), SIGKILL) == 0);
  Wait(first);

  // login2 tries until the lease is taken over; every refusal before names the dead run.
  std::string out2;
  int code2 = -1;
  for (int attempt = 0; attempt < 100; ++attempt) {
    code2 = testing::RunShell(OnHost("login2", s.shared, s.mnt, s.dir.file("pid2"), s.dir.file("out2"))).first;
    out2 = testing::ReadAll(s.dir.file("out2"));
    if (out2.find("another slurmsweep run controls this study") == std::string::npos) break;
    INFO(out2);
    CHECK_THAT(out2, Catch::Contains("host login1, pid " + pid1));
    ::usleep(500000);
  }
  INFO(out2);
  CHECK(code2 == 0);
  std::smatch m;
  REQUIRE(std::regex_search(out2, m,
                            std::regex("took the study over from a run that stopped renewing its lease \\(host login1, "
                                       "pid " +
                                       pid1 + ", heartbeat ([0-9]+) s ago")));
  // Taken over because the heartbeat was as old as the timeout, not before.
  CHECK(std::stoi(m[1].str()) >= 4);

  auto db = store::Store::OpenReadOnly(s.shared + "/takeover.db");
  REQUIRE(db.ok());
  auto study = (*db)->GetStudy("takeover");
  REQUIRE(study.ok());
  auto trials = (*db)->ListTrials(study->id);
  REQUIRE(trials.ok());
  REQUIRE(trials->size() == kTrials);
  for (const auto& t : *trials) CHECK(t.state == "completed");
  auto events = (*db)->Events(study->id);
  REQUIRE(events.ok());
  CHECK(std::count_if(events->begin(), events->end(), [](const auto& e) { return e.kind == "takeover"; }) == 1);
  auto jobs = JobsByName("takeover");
  CHECK(jobs.size() == kTrials);
  for (const auto& [name, n] : jobs) CHECK(n == 1);
}
