// Reaching a cluster the way real sites let you (tests/cluster/sites.sh beside the lab): an sshd that asks for
// the key and then a TOTP code, a bastion for ProxyJump, the system's ssh over a ControlMaster. Tagged
// [cluster][sites]; CTest starts the sites after the lab.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "run/connect.h"
#include "run/runner.h"
#include "slurm/transport.h"
#include "tests/cluster_harness.h"
#include "tests/test_util.h"

using namespace sweep;
using testing::ClusterVar;
using testing::Harness;

namespace {

constexpr const char* kTemplate = R"(#!/bin/bash
set -euo pipefail
exec {{workdir}}/mlp_train --micro-batch-size 4 --lr {{lr}} --optimizer sgd \
  --hidden 16 --train-iters {{iters}} --log-interval 5 --sleep-ms {{sleep_ms}}
)";

// A study reaching the lab through the sites' ssh config: `host` is one of its Host entries.
std::string WriteSiteStudy(const testing::TempDir& dir, const std::string& name, const std::string& transport,
                           const std::string& host, const std::string& cluster_extra, int iters = 20,
                           int sleep_ms = 0) {
  testing::WriteAll(dir.file("job.sbatch"), kTemplate);
  std::string text = fmt::format(
      R"([study]
name = "{name}"

[cluster]
transport = "{transport}"
host = "{host}"
ssh_config = "{config}"
partition = "{partition}"
workdir = "{work}"
max_concurrent = 4
poll_interval_s = 0.5
{extra}

[job]
template = "job.sbatch"
cpus_per_task = 1
mem = "200M"
time_limit = "00:05:00"
stage = ["{bin}/bin/mlp_train"]

[job.vars]
iters = {iters}
sleep_ms = {sleep}

[space]
lr = [0.01, 0.02, 0.03]
)",
      fmt::arg("name", name), fmt::arg("transport", transport), fmt::arg("host", host),
      fmt::arg("config", ClusterVar("SLURMSWEEP_SITES_SSH_CONFIG")),
      fmt::arg("partition", ClusterVar("SLURMSWEEP_PARTITION")), fmt::arg("work", dir.file("work")),
      fmt::arg("extra", cluster_extra), fmt::arg("bin", SLURMSWEEP_BINARY_DIR), fmt::arg("iters", iters),
      fmt::arg("sleep", sleep_ms));
  testing::WriteAll(dir.file("study.toml"), text);
  return dir.file("study.toml");
}

std::string Slurmsweep() { return std::string(SLURMSWEEP_BINARY_DIR) + "/bin/slurmsweep"; }

// The `ssh -M ...` line a require_master error prints (the line after "with:").
std::string MasterCommandIn(const std::string& message) {
  size_t at = message.find("with:\n");
  if (at == std::string::npos) return "";
  std::string rest = message.substr(at + 6);
  size_t start = rest.find_first_not_of(' ');
  return rest.substr(start, rest.find('\n', start) - start);
}

// Runs the printed command as a user would, the TOTP code typed by the lab's askpass.
int OpenMasterWithCode(const std::string& command) {
  return testing::RunShell(fmt::format("SSH_ASKPASS={} SSH_ASKPASS_REQUIRE=force DISPLAY=:0 {} </dev/null 2>&1",
                                       ClusterVar("SLURMSWEEP_SITES_ASKPASS"), command))
      .first;
}

void CloseMaster(const study::ClusterSpec& c, const std::string& dir) {
  testing::RunShell(fmt::format("ssh -F {} -o ControlPath={} -O exit {} 2>/dev/null",
                                c.ssh_config.empty() ? "/dev/null" : c.ssh_config, run::ControlPathFor(c, dir),
                                c.host));
}

void ExpectAllCompletedOnce(Harness& h, size_t n) {
  auto trials = h.Trials();
  REQUIRE(trials.size() == n);
  for (const auto& t : trials) {
    INFO(t.trial_key << " " << t.state << " " << t.reason << "\n" << h.log.str());
    CHECK(t.state == "completed");
    CHECK(h.store->CountMetrics(t.id).value() > 0);
  }
}

}  // namespace

TEST_CASE(
    "openssh with require_master: no master names the ssh -M command; with it, behind a TOTP code, a study "
    "runs to the end",
    "[cluster][sites]") {
  testing::TempDir dir;
  std::string path = WriteSiteStudy(dir, "totp", "openssh", "sitetotp", "require_master = true");
  auto [code, out] = testing::RunShell(Slurmsweep() + " run " + path + " 2>&1");
  INFO(out);
  CHECK(code == 4);
  CHECK_THAT(out, Catch::Contains("no live ssh master connection") && Catch::Contains("require_master = true"));
  std::string command = MasterCommandIn(out);
  REQUIRE(command.rfind("ssh -M -N -f ", 0) == 0);
  CHECK_FALSE(std::filesystem::exists(dir.file("work")));  // nothing ran

  // The printed command, run as printed, opens the master after the key and the code.
  REQUIRE(OpenMasterWithCode(command) == 0);
  {
    Harness h(path);
    CHECK_THAT(h.transport->Describe(),
               Catch::StartsWith("openssh root@127.0.0.1:" + ClusterVar("SLURMSWEEP_TOTP_SSH_PORT")));
    auto st = h.runner->Run(240);
    INFO(st.ToString());
    REQUIRE(st.ok());
    ExpectAllCompletedOnce(h, 3);
    CHECK(h.runner->slurm_stats().sbatch == 1);
  }
  // status and logs after the run go through the same master.
  auto [scode, sout] = testing::RunShell(Slurmsweep() + " status " + path + " 2>&1");
  INFO(sout);
  CHECK(scode == 0);
  CHECK_THAT(sout, Catch::Contains("3 completed"));
  auto study = study::LoadStudy(path);
  REQUIRE(study.ok());
  CloseMaster(study->cluster, study->dir);
}

TEST_CASE("openssh without require_master meets a second factor: the message says so and names the ssh -M command",
          "[cluster][sites]") {
  testing::TempDir dir;
  std::string path = WriteSiteStudy(dir, "totp2", "openssh", "sitetotp", "");
  auto [code, out] = testing::RunShell(Slurmsweep() + " run " + path + " 2>&1");
  INFO(out);
  CHECK(code == 2);
  CHECK_THAT(out, Catch::Contains("asks for a second factor (keyboard-interactive)") &&
                      Catch::Contains("require_master = true") && Catch::Contains("ssh -M -N -f"));
}

TEST_CASE("libssh against a key-then-TOTP sshd says the key was accepted and a second factor is asked",
          "[cluster][sites]") {
  slurm::SshOptions o;
  o.host = "127.0.0.1";
  o.port = std::stoi(ClusterVar("SLURMSWEEP_TOTP_SSH_PORT"));
  o.user = "root";
  o.identity_file = ClusterVar("SLURMSWEEP_SSH_KEY");
  o.known_hosts_file = ClusterVar("SLURMSWEEP_SITES_KNOWN_HOSTS");
  o.process_ssh_config = false;
  auto t = slurm::ConnectSsh(o);
  REQUIRE_FALSE(t.ok());
  INFO(t.status().ToString());
  CHECK_THAT(t.status().message(),
             Catch::Contains("the server accepted the key and asks for a second factor (keyboard-interactive)") &&
                 Catch::Contains("transport = \"openssh\"") && Catch::Contains(o.identity_file));
  CHECK_THAT(t.status().message(), !Catch::Contains("check [cluster] user"));

  // A key the server does not know is a refusal, with the other advice.
  testing::TempDir dir;
  REQUIRE(testing::RunShell("ssh-keygen -q -t ed25519 -N '' -f " + dir.file("other")).first == 0);
  o.identity_file = dir.file("other");
  auto refused = slurm::ConnectSsh(o);
  REQUIRE_FALSE(refused.ok());
  CHECK_THAT(refused.status().message(), Catch::Contains("was refused") && Catch::Contains("check [cluster] user"));
}

TEST_CASE(
    "ProxyJump: a study runs through the bastion; with the bastion down the error names the hop and ssh's message",
    "[cluster][sites]") {
  testing::TempDir dir;
  std::string path = WriteSiteStudy(dir, "jump", "openssh", "sitecluster", "");
  {
    Harness h(path);
    CHECK_THAT(h.transport->Describe(), Catch::EndsWith("via jump host sitebastion"));
    auto st = h.runner->Run(240);
    INFO(st.ToString());
    REQUIRE(st.ok());
    ExpectAllCompletedOnce(h, 3);
    CHECK_THAT(h.log.str(), Catch::Contains("via openssh root@127.0.0.1:" + ClusterVar("SLURMSWEEP_SSH_PORT") +
                                            " via jump host sitebastion"));
    CloseMaster(h.study.cluster, h.study.dir);
  }

  std::string lab = ClusterVar("SLURMSWEEP_LAB");
  std::string pid = testing::ReadAll(lab + "/sites/bastion.pid");
  pid.erase(pid.find_last_not_of(" \n") + 1);
  REQUIRE(testing::RunShell("kill " + pid).first == 0);
  for (int i = 0; i < 50 && testing::RunShell("kill -0 " + pid + " 2>/dev/null").first == 0; ++i) ::usleep(100000);
  auto [code, out] = testing::RunShell(Slurmsweep() + " run " + path + " 2>&1");
  INFO(out);
  CHECK_THAT(out, Catch::Contains("via jump host sitebastion") && Catch::Contains("Connection refused"));
  CHECK(code == 3);

  // libssh: the same hop as a ProxyCommand; its ssh's own words are shown.
  std::string pc = WriteSiteStudy(dir, "jumppc", "ssh", "sitecluster-pc", "");
  auto [pcode, pout] = testing::RunShell(Slurmsweep() + " run " + pc + " 2>&1");
  INFO(pout);
  CHECK(pcode == 3);
  CHECK_THAT(pout, Catch::Contains("via proxy command") && Catch::Contains("sitebastion") &&
                       Catch::Contains("the proxy said") && Catch::Contains("Connection refused"));

  REQUIRE(testing::RunShell("/usr/sbin/sshd -f " + ClusterVar("SLURMSWEEP_SITES_BASTION_CONFIG") + " -E " + lab +
                            "/log/sshd_bastion.log")
              .first == 0);
}

TEST_CASE(
    "a master lost mid-run is 'cluster unreachable', then 're-authentication needed' with the jobs left; a "
    "resume through a new master loses nothing",
    "[cluster][sites]") {
  testing::TempDir dir;
  std::string path =
      WriteSiteStudy(dir, "reauth", "openssh", "sitetotp", "require_master = true\nreauth_wait_s = 2", 40, 150);
  auto [code, out] = testing::RunShell(Slurmsweep() + " run " + path + " 2>&1");
  std::string command = MasterCommandIn(out);
  INFO(out);
  REQUIRE(code == 4);
  REQUIRE(OpenMasterWithCode(command) == 0);
  std::map<std::string, std::string> jobs;
  {
    Harness h(path);
    bool closed = false;
    h.runner->set_on_tick([&](const run::TickReport& r) {
      if (!closed && r.running + r.queued > 0) {
        CloseMaster(h.study.cluster, h.study.dir);  // the login node dropped it; a new one needs the code
        closed = true;
      }
    });
    auto st = h.runner->Run(400);
    INFO(h.log.str());
    REQUIRE(closed);
    CHECK(st.code() == Status::Code::kUnavailable);
    CHECK(st.cause() == Status::Cause::kReauthNeeded);
    CHECK_THAT(st.message(), Catch::StartsWith("re-authentication needed") && Catch::Contains("ssh -M -N -f") &&
                                 Catch::Contains("left on Slurm"));
    CHECK_THAT(h.log.str(), Catch::Contains("cluster unreachable, will retry"));
    for (const auto& t : h.Trials()) {
      if (!t.job_id.empty()) {
        jobs[t.trial_key] = t.job_id;
        if (t.state != "completed") CHECK_THAT(st.message(), Catch::Contains(t.job_id));
      }
    }
    REQUIRE_FALSE(jobs.empty());
  }
  REQUIRE(OpenMasterWithCode(command) == 0);
  Harness again(path);
  auto st = again.runner->Run(400);
  INFO(st.ToString() << "\n" << again.log.str());
  REQUIRE(st.ok());
  ExpectAllCompletedOnce(again, 3);
  for (const auto& t : again.Trials()) {
    if (jobs.count(t.trial_key)) CHECK(t.job_id == jobs[t.trial_key]);  // tracked again, never resubmitted
  }
  CloseMaster(again.study.cluster, again.study.dir);
}

namespace {

// The pids of this lab's sshd processes started with `config` (the listener and its sessions).
std::vector<std::string> SshdPidsOf(const std::string& config) {
  auto [code, out] =
      testing::RunShell("for p in /proc/[0-9]*; do { tr '\\0' ' ' <$p/cmdline; } 2>/dev/null | grep -q -- '-f " +
                        config + " ' && echo ${p#/proc/}; done");
  std::vector<std::string> pids;
  std::istringstream in(out);
  for (std::string pid; in >> pid;) pids.push_back(pid);
  return pids;
}

}  // namespace

TEST_CASE(
    "libssh: the server switches to a second factor mid-run; the run backs off, stops with "
    "'re-authentication needed', and a resume through a master loses nothing",
    "[cluster][sites]") {
  std::string lab = ClusterVar("SLURMSWEEP_LAB");
  std::string sites = lab + "/sites";
  std::string bastion_config = ClusterVar("SLURMSWEEP_SITES_BASTION_CONFIG");
  std::string port = ClusterVar("SLURMSWEEP_BASTION_SSH_PORT");
  // A plain sshd (the bastion's, which reaches the lab's Slurm too) that will turn into a TOTP one.
  testing::TempDir dir;
  auto write = [&](const std::string& transport, const std::string& extra) {
    testing::WriteAll(dir.file("job.sbatch"), kTemplate);
    testing::WriteAll(
        dir.file("study.toml"),
        fmt::format(R"([study]
name = "switch"

[cluster]
transport = "{}"
host = "127.0.0.1"
port = {}
user = "root"
identity_file = "{}"
known_hosts = "{}"
partition = "{}"
workdir = "{}"
max_concurrent = 4
poll_interval_s = 0.5
reauth_wait_s = 3
{}

[job]
template = "job.sbatch"
cpus_per_task = 1
mem = "200M"
time_limit = "00:05:00"
stage = ["{}/bin/mlp_train"]

[job.vars]
iters = 40
sleep_ms = 150

[space]
lr = [0.01, 0.02, 0.03]
)",
                    transport, port, ClusterVar("SLURMSWEEP_SSH_KEY"), ClusterVar("SLURMSWEEP_SITES_KNOWN_HOSTS"),
                    ClusterVar("SLURMSWEEP_PARTITION"), dir.file("work"), extra, SLURMSWEEP_BINARY_DIR));
    return dir.file("study.toml");
  };
  std::string path = write("ssh", "");

  // The TOTP sshd's settings on the bastion's port, run under the lab's PAM service name.
  std::string totp = testing::ReadAll(sites + "/sshd_totp_config");
  totp.replace(totp.find("ListenAddress 127.0.0.1:"),
               totp.find('\n', totp.find("ListenAddress")) - totp.find("ListenAddress 127.0.0.1:"),
               "ListenAddress 127.0.0.1:" + port);
  totp.replace(totp.find("/totp.pid"), 9, "/switch.pid");
  testing::WriteAll(sites + "/sshd_switch_config", totp);
  std::string service = testing::Capture("ls " + sites + " | grep '^sstotp'");
  service.erase(service.find_last_not_of("\n") + 1);
  REQUIRE_FALSE(service.empty());

  std::map<std::string, std::string> jobs;
  {
    Harness h(path);
    bool switched = false;
    h.runner->set_on_tick([&](const run::TickReport& r) {
      if (switched || r.running + r.queued == 0) return;
      // The listener and the sessions it forked (their titles no longer name the config): our session drops.
      for (const auto& pid : SshdPidsOf(bastion_config)) {
        testing::RunShell("kill $(ps -o pid= --ppid " + pid + ") " + pid + " 2>/dev/null");
      }
      for (int i = 0; i < 50 && !SshdPidsOf(bastion_config).empty(); ++i) ::usleep(100000);
      testing::RunShell(
          fmt::format("{}/{} -f {}/sshd_switch_config -E {}/log/sshd_switch.log", sites, service, sites, lab));
      switched = true;
    });
    auto st = h.runner->Run(400);
    INFO(st.ToString() << "\n" << h.log.str());
    REQUIRE(switched);
    CHECK(st.code() == Status::Code::kUnavailable);
    CHECK(st.cause() == Status::Cause::kReauthNeeded);
    CHECK_THAT(st.message(), Catch::StartsWith("re-authentication needed") &&
                                 Catch::Contains("asks for a second factor (keyboard-interactive)") &&
                                 !Catch::Contains("invalid input"));
    CHECK_THAT(h.log.str(), Catch::Contains("cluster unreachable, will retry"));
    for (const auto& t : h.Trials()) {
      if (t.job_id.empty()) continue;
      jobs[t.trial_key] = t.job_id;
      if (t.state != "completed") CHECK_THAT(st.message(), Catch::Contains(t.job_id));
    }
    REQUIRE_FALSE(jobs.empty());
  }
  // The CLI says the same with exit 3 (unreachable), never 2 (invalid input)... at start it is a setting.
  auto [code, out] = testing::RunShell(Slurmsweep() + " run " + path + " 2>&1");
  INFO(out);
  CHECK(code == 2);
  CHECK_THAT(out, Catch::Contains("asks for a second factor"));

  // The way on: a master opened with the code, and the same study through it.
  path = write("openssh", "require_master = true");
  auto [mcode, mout] = testing::RunShell(Slurmsweep() + " run " + path + " 2>&1");
  INFO(mout);
  REQUIRE(mcode == 4);
  REQUIRE(OpenMasterWithCode(MasterCommandIn(mout)) == 0);
  {
    Harness again(path);
    auto st = again.runner->Run(400);
    INFO(st.ToString() << "\n" << again.log.str());
    REQUIRE(st.ok());
    ExpectAllCompletedOnce(again, 3);
    for (const auto& t : again.Trials()) {
      if (jobs.count(t.trial_key)) CHECK(t.job_id == jobs[t.trial_key]);
    }
    CloseMaster(again.study.cluster, again.study.dir);
  }
  for (const auto& pid : SshdPidsOf(sites + "/sshd_switch_config")) testing::RunShell("kill " + pid + " 2>/dev/null");
  for (int i = 0; i < 50 && !SshdPidsOf(sites + "/sshd_switch_config").empty(); ++i) ::usleep(100000);
  REQUIRE(testing::RunShell("/usr/sbin/sshd -f " + bastion_config + " -E " + lab + "/log/sshd_bastion.log").first == 0);
}
