// Host keys as OpenSSH reads known_hosts, against the lab's real sshd (and one started here with a
// host certificate): @revoked refuses a key even beside a plain line for it and is never recorded
// by --accept-host-key; a host vouched for by @cert-authority is refused with the reason (libssh
// 0.10 cannot verify certificates), never with advice to pin the plain key. Tagged [cluster].
#include <catch2/catch.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <map>
#include <cstdlib>
#include <string>

#include "slurm/transport.h"
#include "tests/test_util.h"

namespace sweep::slurm {
namespace {

using sweep::testing::TempDir;

std::map<std::string, std::string> Lab() {
  auto env = testing::ClusterEnv();
  if (env.count("SLURMSWEEP_SSH_HOST") == 0) FAIL("test cluster not running: run tests/cluster/start.sh first");
  return env;
}

SshOptions LabOptions(const std::string& known_hosts) {
  auto env = Lab();
  SshOptions o;
  o.host = env["SLURMSWEEP_SSH_HOST"];
  o.port = std::stoi(env["SLURMSWEEP_SSH_PORT"]);
  o.user = env["SLURMSWEEP_SSH_USER"];
  o.identity_file = env["SLURMSWEEP_SSH_KEY"];
  o.known_hosts_file = known_hosts;
  o.process_ssh_config = false;
  o.connect_timeout_s = 5;
  return o;
}

std::string Fingerprint(const std::string& pub) {
  auto [rc, line] = testing::RunShell("ssh-keygen -l -E sha256 -f " + pub);
  REQUIRE(rc == 0);
  size_t at = line.find("SHA256:");
  return line.substr(at, line.find(' ', at) - at);
}

// "ssh-ed25519 AAAA..." of a .pub file.
std::string KeyOf(const std::string& pub) {
  std::string text = testing::ReadAll(pub);
  return text.substr(0, text.find(' ', text.find(' ') + 1));
}

void CheckNoPinningAdvice(const std::string& message) {
  CHECK_THAT(message, !Catch::Contains("rerun with --accept-host-key"));
  CHECK_THAT(message, !Catch::Contains("ssh-keyscan"));
}

}  // namespace

TEST_CASE("a host key named by a @revoked line is refused, even with a plain line for it", "[cluster]") {
  TempDir dir;
  std::string lab_line = testing::ReadAll(Lab()["SLURMSWEEP_SSH_KNOWN_HOSTS"]);  // "[127.0.0.1]:PORT TYPE KEY\n"
  std::string key = lab_line.substr(lab_line.find(' ') + 1);
  std::string known_hosts = dir.file("known_hosts");
  for (const std::string& revoked_pattern : {std::string("*"), lab_line.substr(0, lab_line.find(' '))}) {
    DYNAMIC_SECTION("@revoked " << revoked_pattern << " after a plain line") {
      testing::WriteAll(known_hosts, lab_line + "@revoked " + revoked_pattern + " " + key);
      auto r = ConnectSsh(LabOptions(known_hosts));
      REQUIRE_FALSE(r.ok());
      CHECK(r.status().code() == Status::Code::kFailedPrecondition);
      CHECK_THAT(r.status().message(), Catch::Contains("REVOKED") && Catch::Contains(known_hosts + ":2"));
    }
  }
  SECTION("the plain line alone still connects: the refusal is the @revoked line's") {
    testing::WriteAll(known_hosts, lab_line);
    auto r = ConnectSsh(LabOptions(known_hosts));
    INFO(r.status().ToString());
    CHECK(r.ok());
  }
}

TEST_CASE("--accept-host-key never records a key a @revoked line names, even with its right fingerprint", "[cluster]") {
  TempDir dir;
  auto env = Lab();
  std::string lab_line = testing::ReadAll(env["SLURMSWEEP_SSH_KNOWN_HOSTS"]);
  std::string known_hosts = dir.file("known_hosts");
  std::string content = "@revoked * " + lab_line.substr(lab_line.find(' ') + 1);
  testing::WriteAll(known_hosts, content);
  SshOptions o = LabOptions(known_hosts);
  o.accept_host_key = Fingerprint(env["SLURMSWEEP_LAB"] + "/ssh/ssh_host_ed25519_key.pub");
  auto r = ConnectSsh(o);
  REQUIRE_FALSE(r.ok());
  CHECK_THAT(r.status().message(), Catch::Contains("REVOKED"));
  CHECK(testing::ReadAll(known_hosts) == content);  // nothing appended
}

TEST_CASE("a host vouched for by @cert-authority is refused with the reason, never with advice to pin", "[cluster]") {
  TempDir dir;
  REQUIRE(std::system(("ssh-keygen -q -t ed25519 -N '' -C test-ca -f " + dir.file("ca")).c_str()) == 0);
  auto env = Lab();
  std::string name = "[" + env["SLURMSWEEP_SSH_HOST"] + "]:" + env["SLURMSWEEP_SSH_PORT"];
  std::string known_hosts = dir.file("known_hosts");
  std::string content = "@cert-authority " + name + " " + KeyOf(dir.file("ca.pub")) + "\n";
  testing::WriteAll(known_hosts, content);
  SshOptions o = LabOptions(known_hosts);
  SECTION("the lab's plain key, only a CA line for the host") {
    auto r = ConnectSsh(o);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == Status::Code::kFailedPrecondition);
    CHECK_THAT(r.status().message(), Catch::Contains("@cert-authority") && Catch::Contains("cannot verify") &&
                                         Catch::Contains(known_hosts + ":1"));
    CheckNoPinningAdvice(r.status().message());
  }
  SECTION("with --accept-host-key and the key's right fingerprint: refused, nothing recorded") {
    o.accept_host_key = Fingerprint(env["SLURMSWEEP_LAB"] + "/ssh/ssh_host_ed25519_key.pub");
    auto r = ConnectSsh(o);
    REQUIRE_FALSE(r.ok());
    CHECK_THAT(r.status().message(), Catch::Contains("cannot verify"));
    CHECK(testing::ReadAll(known_hosts) == content);
  }
}

TEST_CASE("an sshd presenting a host certificate signed by the @cert-authority is refused with the reason",
          "[cluster]") {
  TempDir dir;
  auto env = Lab();
  // A second real sshd, with a host key signed by a CA of our own, on a free port of loopback.
  std::string d = dir.path().string();
  REQUIRE(std::system(("ssh-keygen -q -t ed25519 -N '' -C test-ca -f " + d +
                       "/ca && ssh-keygen -q -t ed25519 -N '' "
                       "-C cert-host -f " +
                       d + "/host && ssh-keygen -q -s " + d + "/ca -I cert-host -h -n 127.0.0.1 " + d + "/host.pub")
                          .c_str()) == 0);
  int sock = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(sock, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  socklen_t len = sizeof addr;
  REQUIRE(::getsockname(sock, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  int port = ntohs(addr.sin_port);
  ::close(sock);
  testing::WriteAll(d + "/sshd_config", "ListenAddress 127.0.0.1:" + std::to_string(port) + "\nHostKey " + d +
                                            "/host\nHostCertificate " + d + "/host-cert.pub\nPidFile " + d +
                                            "/sshd.pid\nAuthorizedKeysFile " + env["SLURMSWEEP_LAB"] +
                                            "/ssh/authorized_keys\nStrictModes no\nUsePAM no\n"
                                            "PermitRootLogin prohibit-password\nPasswordAuthentication no\n");
  REQUIRE(std::system(("/usr/sbin/sshd -f " + d + "/sshd_config -E " + d + "/sshd.log").c_str()) == 0);
  // Ready when it listens (sshd writes its pid file after binding).
  for (int i = 0; i < 200 && testing::ReadAll(d + "/sshd.pid").empty(); ++i) ::usleep(20000);
  std::string pid = testing::ReadAll(d + "/sshd.pid");
  REQUIRE_FALSE(pid.empty());
  struct StopSshd {
    int pid;
    ~StopSshd() { ::kill(pid, SIGTERM); }
  } stop{std::stoi(pid)};

  std::string known_hosts = d + "/known_hosts";
  std::string content = "@cert-authority [127.0.0.1]:" + std::to_string(port) + " " + KeyOf(d + "/ca.pub") + "\n";
  testing::WriteAll(known_hosts, content);
  SshOptions o = LabOptions(known_hosts);
  o.port = port;
  auto r = ConnectSsh(o);
  REQUIRE_FALSE(r.ok());
  INFO(r.status().ToString());
  CHECK(r.status().code() == Status::Code::kFailedPrecondition);
  CHECK_THAT(r.status().message(), Catch::Contains("cannot verify") && Catch::Contains("libssh 0.10"));
  CheckNoPinningAdvice(r.status().message());
  o.accept_host_key = Fingerprint(d + "/host.pub");
  CHECK_FALSE(ConnectSsh(o).ok());
  CHECK(testing::ReadAll(known_hosts) == content);
}

}  // namespace sweep::slurm
