// Tests for both Transports: one contract checked against LocalTransport (unit) and against
// SshTransport on the test cluster's sshd ([cluster]), plus SSH's own refusals and reconnect.
#include "slurm/transport.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "tests/test_util.h"

namespace sweep::slurm {
namespace {

using sweep::testing::TempDir;

// Checked through the transport itself, so the same check holds on the far side of SSH.
std::string ModeOf(Transport& t, const std::string& path) {
  auto r = t.Run("stat -c %a '" + path + "'");
  REQUIRE(r.ok());
  return r->out;
}

bool Exists(Transport& t, const std::string& path) {
  auto r = t.Run("test -e '" + path + "'");
  REQUIRE(r.ok());
  return r->exit_code == 0;
}

// The Transport contract. Each SECTION reruns the calling TEST_CASE from the top.
void CheckContract(Transport& t) {
  TempDir dir;

  SECTION("Run returns stdout, stderr and the exit code") {
    auto r = t.Run("echo out; echo err >&2; exit 3");
    REQUIRE(r.ok());
    CHECK(r->out == "out\n");
    CHECK(r->err == "err\n");
    CHECK(r->exit_code == 3);
  }

  SECTION("Run does not deadlock when stderr and stdout each exceed 1 MiB") {
    auto r = t.Run(
        "head -c 1500000 /dev/zero | tr '\\0' e >&2; head -c 1500000 /dev/zero | tr '\\0' o;"
        "head -c 1500000 /dev/zero | tr '\\0' E >&2");
    REQUIRE(r.ok());
    CHECK(r->exit_code == 0);
    CHECK(r->out == std::string(1500000, 'o'));
    CHECK(r->err == std::string(1500000, 'e') + std::string(1500000, 'E'));
  }

  SECTION("Run reports a command killed by signal N as 128+N, like a shell") {
    auto r = t.Run("kill -9 $$");
    REQUIRE(r.ok());
    CHECK(r->exit_code == 128 + 9);
  }

  SECTION("Run gives the command an empty stdin") {
    auto r = t.Run("cat; echo done");
    REQUIRE(r.ok());
    CHECK(r->out == "done\n");
  }

  SECTION("Run passes quotes through to /bin/sh untouched") {
    auto r = t.Run("printf '%s|' \"it's\" 'a \"b\"' '$HOME'");
    REQUIRE(r.ok());
    CHECK(r->out == "it's|a \"b\"|$HOME|");
  }

  SECTION("WriteFile then ReadFrom from offsets") {
    std::string path = dir.file("data.txt");
    REQUIRE(t.WriteFile(path, "0123456789", 0640).ok());
    CHECK(ModeOf(t, path) == "640\n");
    CHECK(*t.ReadFrom(path, 0, 100) == "0123456789");
    CHECK(*t.ReadFrom(path, 3, 4) == "3456");
    CHECK(*t.ReadFrom(path, 7, 100) == "789");
    CHECK(*t.ReadFrom(path, 10, 5) == "");
    CHECK(*t.ReadFrom(path, 1000, 5) == "");
    CHECK(*t.ReadFrom(path, 0, 0) == "");

    // Replacing an existing file, with a new mode, leaves no temporary file behind.
    REQUIRE(t.WriteFile(path, "new", 0755).ok());
    CHECK(*t.ReadFrom(path, 0, 100) == "new");
    CHECK(ModeOf(t, path) == "755\n");
    CHECK(t.Run("ls -A '" + dir.path().string() + "'")->out == "data.txt\n");
  }

  SECTION("a large binary file round-trips") {
    std::string content;
    for (int i = 0; i < 300000; ++i) content += static_cast<char>(i * 7 % 256);
    std::string path = dir.file("big.bin");
    REQUIRE(t.WriteFile(path, content, 0644).ok());
    CHECK(*t.ReadFrom(path, 0, content.size() + 10) == content);
    CHECK(*t.ReadFrom(path, 100000, 150000) == content.substr(100000, 150000));
  }

  SECTION("ReadFrom a missing file is NotFound") {
    auto r = t.ReadFrom(dir.file("no-such-log.out"), 0, 100);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().IsNotFound());
  }

  SECTION("WriteFile into a missing directory fails, but not as NotFound") {
    Status st = t.WriteFile(dir.file("no-such-dir/x.sh"), "x", 0644);
    CHECK_FALSE(st.ok());
    CHECK_FALSE(st.IsNotFound());
  }

  SECTION("ReadMany gives each file what ReadFrom gives, one command per 100 files over SSH") {
    // 130 files (two batches of the one-command path): empty, short, binary, with hostile names,
    // read from the start, from the middle and past the end; one missing.
    std::vector<ReadRequest> reqs;
    for (int i = 0; i < 130; ++i) {
      std::string content =
          i % 7 == 0 ? "" : std::string(static_cast<size_t>(i * 37 % 500), static_cast<char>('a' + i % 26));
      if (i % 11 == 0) content += std::string("\0\n\xff 'q' $(x)\n", 17);
      std::string path = dir.file(fmt::format("log {} $(touch pwned) '{}'.out", i, i));
      REQUIRE(t.WriteFile(path, content, 0644).ok());
      uint64_t offset = i % 3 == 0 ? 0 : i % 3 == 1 ? content.size() / 2 : content.size() + 5;
      reqs.push_back({path, offset, static_cast<size_t>(i % 5 == 0 ? 10 : 4096)});
    }
    reqs.push_back({dir.file("missing.out"), 0, 100});
    for (auto batch : {std::vector<ReadRequest>(reqs.begin(), reqs.begin() + 2), reqs}) {
      auto many = t.ReadMany(batch);
      REQUIRE(many.size() == batch.size());
      for (size_t i = 0; i < batch.size(); ++i) {
        auto one = t.ReadFrom(batch[i].path, batch[i].offset, batch[i].max_bytes);
        INFO(batch[i].path << " from " << batch[i].offset);
        REQUIRE(many[i].ok() == one.ok());
        if (one.ok()) CHECK(*many[i] == *one);
        else CHECK(many[i].status().IsNotFound());
      }
    }
    auto direct = ReadManyByCommand(t, reqs);  // the one-command path, whatever the transport
    REQUIRE(direct.size() == reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
      auto one = t.ReadFrom(reqs[i].path, reqs[i].offset, reqs[i].max_bytes);
      REQUIRE(direct[i].ok() == one.ok());
      if (one.ok()) CHECK(*direct[i] == *one);
    }
    CHECK_FALSE(Exists(t, dir.file("pwned")));
    CHECK(t.ReadManyCalls(130) <= 130);
  }

  SECTION("file content and names are data, never run by a shell") {
    std::string marker = dir.file("pwned");
    std::string content = "echo $(touch " + marker + ") `touch " + marker + "`; '\"\n";
    std::string name = "a $(touch pwned) `touch pwned` b.sh";
    std::string path = dir.file(name);
    REQUIRE(t.WriteFile(path, content, 0755).ok());
    CHECK(*t.ReadFrom(path, 0, 1000) == content);
    CHECK_FALSE(Exists(t, marker));
    // Expanded by a shell, the name would have lost its $(...) part.
    CHECK(t.Run("ls -A '" + dir.path().string() + "'")->out == name + "\n");
  }
}

TEST_CASE("LocalTransport keeps the Transport contract") {
  auto t = NewLocalTransport();
  CHECK(t->Describe() == "local");
  CheckContract(*t);
}

// A tick reads every running trial's log in one ReadMany and holds the results together: a short read
// must hold about what it read, not the chunks it read with (issue 42: 10,000 one-line reads held 1.3 GB).
TEST_CASE("LocalTransport: what ReadFrom returns holds about its size, whatever max_bytes") {
  auto t = NewLocalTransport();
  TempDir dir;
  std::string path = dir.file("one-line.log");
  REQUIRE(t->WriteFile(path, std::string(80, 'x') + "\n", 0644).ok());
  std::vector<ReadRequest> reads(50, ReadRequest{path, 0, 16 << 20});
  auto got = t->ReadMany(reads);
  REQUIRE(got.size() == reads.size());
  for (const auto& r : got) {
    REQUIRE(r.ok());
    CHECK(*r == std::string(80, 'x') + "\n");
    CHECK(r->capacity() < 1024);
  }
}

// ---- SSH, against the test cluster ----

std::map<std::string, std::string> LabEnv() {
  auto env = sweep::testing::ClusterEnv();
  if (env.count("SLURMSWEEP_SSH_HOST") == 0) FAIL("test cluster not running: run tests/cluster/start.sh first");
  return env;
}

SshOptions LabOptions() {
  auto env = LabEnv();
  SshOptions o;
  o.host = env["SLURMSWEEP_SSH_HOST"];
  o.port = std::stoi(env["SLURMSWEEP_SSH_PORT"]);
  o.user = env["SLURMSWEEP_SSH_USER"];
  o.identity_file = env["SLURMSWEEP_SSH_KEY"];
  o.known_hosts_file = env["SLURMSWEEP_SSH_KNOWN_HOSTS"];
  o.process_ssh_config = false;
  o.connect_timeout_s = 5;
  return o;
}

std::unique_ptr<Transport> ConnectLab() {
  auto r = ConnectSsh(LabOptions());
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  return std::move(r).value();
}

TEST_CASE("SshTransport keeps the Transport contract", "[cluster]") {
  auto t = ConnectLab();
  SshOptions o = LabOptions();
  CHECK(t->Describe() == "ssh " + o.user + "@" + o.host + ":" + std::to_string(o.port));
  CheckContract(*t);
}

TEST_CASE("SshTransport reaches the cluster's Slurm", "[cluster]") {
  auto r = ConnectLab()->Run("sinfo -h");
  REQUIRE(r.ok());
  INFO(r->err);
  CHECK(r->exit_code == 0);
  CHECK_FALSE(r->out.empty());
}

TEST_CASE("SshTransport refuses host keys it cannot verify", "[cluster]") {
  SshOptions o = LabOptions();
  TempDir dir;

  SECTION("a changed key") {
    o.known_hosts_file = LabEnv()["SLURMSWEEP_SSH_WRONG_KNOWN_HOSTS"];
    auto r = ConnectSsh(o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kFailedPrecondition);
    CHECK_THAT(r.status().message(), Catch::Contains("CHANGED") && Catch::Contains("SHA256:"));
  }
  SECTION("an empty known_hosts") {
    o.known_hosts_file = dir.file("known_hosts");
    sweep::testing::WriteAll(o.known_hosts_file, "");
    auto r = ConnectSsh(o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kFailedPrecondition);
    CHECK_THAT(r.status().message(), Catch::Contains("is not in") && Catch::Contains("SHA256:"));
  }
  SECTION("a missing known_hosts") {
    o.known_hosts_file = dir.file("does-not-exist");
    auto r = ConnectSsh(o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kFailedPrecondition);
  }
}

TEST_CASE("SshTransport refuses to go on without authentication", "[cluster]") {
  SshOptions o = LabOptions();
  TempDir dir;

  SECTION("a key the server does not know") {
    o.identity_file = dir.file("id_ed25519");
    REQUIRE(std::system(("ssh-keygen -q -t ed25519 -N '' -f " + o.identity_file).c_str()) == 0);
    auto r = ConnectSsh(o);
    REQUIRE_FALSE(r.ok());
    // Bad input (exit 2), not "refused for safety": the user fixes the study file.
    CHECK(r.status().code() == Status::Code::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::Contains("refused") && Catch::Contains("[cluster] user and identity_file"));
  }
  SECTION("a missing identity file") {
    o.identity_file = dir.file("nope");
    auto r = ConnectSsh(o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::Contains("[cluster] identity_file") && Catch::Contains("nope"));
  }
}

TEST_CASE("SshTransport reports an unreachable server as Unavailable", "[cluster]") {
  SshOptions o = LabOptions();
  o.port = 9;  // discard: nothing listens there on the test machine
  auto r = ConnectSsh(o);
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().IsUnavailable());
}

TEST_CASE("SshTransport reconnects once the session is dropped", "[cluster]") {
  auto t = ConnectLab();
  TempDir dir;
  std::string path = dir.file("still-here.txt");
  REQUIRE(t->WriteFile(path, "hello", 0644).ok());  // opens the SFTP session too

  // Kill, by pid, the sshd process serving this very connection: our nearest sshd ancestor.
  auto killed = t->Run(
      "p=$$; while [ \"$p\" -gt 1 ]; do"
      "  if [ \"$(cat /proc/$p/comm)\" = sshd ]; then kill -9 \"$p\"; sleep 5; exit 0; fi;"
      "  p=$(awk '/^PPid:/ {print $2}' /proc/$p/status);"
      "done; exit 1");
  bool saw_unavailable = !killed.ok() && killed.status().IsUnavailable();
  INFO(killed.status().ToString());
  CHECK((saw_unavailable || killed->exit_code != 1));

  // The dropped call (or the first after it) says Unavailable; a later one reconnects.
  Result<CommandOutput> r = Status::Unavailable("not tried");
  for (int attempt = 0; attempt < 3 && !r.ok(); ++attempt) {
    r = t->Run("echo back");
    if (!r.ok()) {
      CHECK(r.status().IsUnavailable());
      saw_unavailable = true;
    }
  }
  CHECK(saw_unavailable);
  REQUIRE(r.ok());
  CHECK(r->out == "back\n");
  CHECK(*t->ReadFrom(path, 0, 100) == "hello");
}

// The openssh transport on the same sshd, hermetic: -F /dev/null, the lab's key and known_hosts.
OpensshOptions LabOpensshOptions(const TempDir& dir) {
  SshOptions l = LabOptions();
  OpensshOptions o;
  o.host = l.host;
  o.port = l.port;
  o.user = l.user;
  o.identity_file = l.identity_file;
  o.known_hosts_file = l.known_hosts_file;
  o.ssh_config = "/dev/null";
  o.control_path = dir.file("ctl/master");
  o.persist_s = 30;
  return o;
}

void CloseMaster(const OpensshOptions& o) {
  std::system(fmt::format("ssh -F /dev/null -o ControlPath={} -O exit x 2>/dev/null", o.control_path).c_str());
}

TEST_CASE("OpensshTransport keeps the Transport contract over the master it opened", "[cluster]") {
  TempDir dir;
  OpensshOptions o = LabOpensshOptions(dir);
  auto t = ConnectOpenssh(o);
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  CHECK((*t)->Describe() == fmt::format("openssh {}@{}:{}", o.user, o.host, o.port));
  // The master is there, and a command needs nothing else: `ssh -O check` answers on the socket.
  CHECK(std::system(fmt::format("ssh -F /dev/null -o ControlPath={} -O check x 2>/dev/null", o.control_path).c_str()) ==
        0);
  CheckContract(**t);
  CloseMaster(o);
}

TEST_CASE("OpensshTransport: refusals and a lost master in the libssh transport's error classes", "[cluster]") {
  TempDir dir;
  OpensshOptions o = LabOpensshOptions(dir);

  SECTION("a changed host key is refused for safety") {
    o.known_hosts_file = LabEnv()["SLURMSWEEP_SSH_WRONG_KNOWN_HOSTS"];
    auto r = ConnectOpenssh(o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kFailedPrecondition);
    CHECK_THAT(r.status().message(), Catch::Contains("host key"));
  }
  SECTION("a key the server does not know is a setting to fix") {
    o.identity_file = dir.file("id_ed25519");
    REQUIRE(std::system(("ssh-keygen -q -t ed25519 -N '' -f " + o.identity_file).c_str()) == 0);
    auto r = ConnectOpenssh(o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kInvalidArgument);
    CHECK_THAT(r.status().message(), Catch::Contains("refused") && Catch::Contains("[cluster] user and identity_file"));
  }
  SECTION("nothing listening is unavailable") {
    o.port = 9;
    auto r = ConnectOpenssh(o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().IsUnavailable());
  }
  SECTION("require_master without a master fails at once with the command that opens one") {
    o.require_master = true;
    auto r = ConnectOpenssh(o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kFailedPrecondition);
    CHECK_THAT(r.status().message(), Catch::Contains(OpensshMasterCommand(o)));
  }
  SECTION("no ssh on PATH says so") {
    o.ssh_program = "slurmsweep-no-such-ssh";
    auto r = ConnectOpenssh(o);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains("not found on PATH"));
  }
  SECTION("a master lost mid-run: the call is unavailable, never a second login; the next call reopens it") {
    auto t = ConnectOpenssh(o);
    REQUIRE(t.ok());
    CloseMaster(o);
    auto lost = (*t)->Run("echo hi");
    REQUIRE_FALSE(lost.ok());
    CHECK(lost.status().IsUnavailable());
    CHECK(lost.status().cause() == Status::Cause::kNone);  // the run could log in again by itself
    auto back = (*t)->Run("echo back; exit 255");          // a command's own 255 is its exit code
    INFO(back.status().ToString());
    REQUIRE(back.ok());
    CHECK(back->out == "back\n");
    CHECK(back->exit_code == 255);
    CloseMaster(o);
  }
}

}  // namespace
}  // namespace sweep::slurm
