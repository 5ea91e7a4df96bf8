// Tests of the known_hosts markers libssh 0.10 skips: host matching as OpenSSH does it (checked
// against names hashed by ssh-keygen -H itself), @revoked and @cert-authority lines.
#include "slurm/known_hosts.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <random>
#include <string>

#include "tests/test_util.h"

namespace sweep::slurm {

TEST_CASE("known_hosts names and patterns match as OpenSSH's", "[known_hosts]") {
  CHECK(KnownHostsName("login1", 22) == "login1");
  CHECK(KnownHostsName("127.0.0.1", 22022) == "[127.0.0.1]:22022");
  CHECK(KnownHostsPatternsMatch("login1,login2", "login2"));
  CHECK(KnownHostsPatternsMatch("LOGIN*", "login7"));
  CHECK(KnownHostsPatternsMatch("login?", "login7"));
  CHECK_FALSE(KnownHostsPatternsMatch("login?", "login17"));
  CHECK(KnownHostsPatternsMatch("*", "[127.0.0.1]:22022"));
  CHECK(KnownHostsPatternsMatch("[127.0.0.1]:22022", "[127.0.0.1]:22022"));
  CHECK_FALSE(KnownHostsPatternsMatch("127.0.0.1", "[127.0.0.1]:22022"));  // a port other than 22 must be named
  CHECK_FALSE(KnownHostsPatternsMatch("*,!login3", "login3"));             // a negation wins
  CHECK(KnownHostsPatternsMatch("*,!login3", "login4"));
  CHECK_FALSE(KnownHostsPatternsMatch("!login3", "login4"));  // a negation alone matches nothing
}

TEST_CASE("hashed known_hosts names match what ssh-keygen -H wrote, and nothing else", "[known_hosts]") {
  testing::TempDir dir;
  std::string file = dir.file("known_hosts");
  std::mt19937 rng(45);
  for (int round = 0; round < 5; ++round) {
    std::string host = "node" + std::to_string(rng() % 100000);
    int port = round % 2 ? 22 : 20000 + static_cast<int>(rng() % 40000);
    std::string name = KnownHostsName(host, port);
    testing::WriteAll(file,
                      name + " ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBlt2Jg7nCMZWzZQjGYd4bDyEJH/9ywVHBLj0Id3cWNa\n");
    REQUIRE(std::system(("ssh-keygen -q -H -f " + file + " >/dev/null 2>&1").c_str()) == 0);
    std::string hashed = testing::ReadAll(file);
    std::string patterns = hashed.substr(0, hashed.find(' '));
    INFO(name << " -> " << patterns);
    REQUIRE(patterns.starts_with("|1|"));
    CHECK(KnownHostsPatternsMatch(patterns, name));
    CHECK_FALSE(KnownHostsPatternsMatch(patterns, name + "x"));
    CHECK_FALSE(KnownHostsPatternsMatch(patterns, KnownHostsName(host, port == 22 ? 2222 : 22)));
  }
}

TEST_CASE("@revoked names a key for every host; @cert-authority lines are found by host", "[known_hosts]") {
  const std::string key = "AAAAC3NzaC1lZDI1NTE5AAAAIBlt2Jg7nCMZWzZQjGYd4bDyEJH/9ywVHBLj0Id3cWNa";
  const std::string other = "AAAAC3NzaC1lZDI1NTE5AAAAIOtherOtherOtherOtherOtherOtherOtherOther0";
  std::string text =
      "# comment\n"
      "[127.0.0.1]:22022 ssh-ed25519 " +
      key +
      "\n"
      "@revoked * ssh-ed25519 " +
      key +
      "\n"
      "@revoked * ssh-ed25519 " +
      other +
      "\n"
      "@cert-authority *.cluster,[127.0.0.1]:22022 ssh-ed25519 " +
      other +
      " ca\n"
      "@unknown-marker * ssh-ed25519 " +
      key +
      "\n"
      "@revoked\n";
  KnownHostsMarkers m = ScanKnownHostsMarkers(text, "kh", "[127.0.0.1]:22022", "ssh-ed25519", key);
  CHECK(m.revoked_at == std::vector<std::string>{"kh:3"});
  CHECK(m.cert_authority_at == std::vector<std::string>{"kh:5"});
  KnownHostsMarkers login = ScanKnownHostsMarkers(text, "kh", "login.cluster", "ssh-ed25519", other);
  CHECK(login.revoked_at == std::vector<std::string>{"kh:4"});
  CHECK(login.cert_authority_at == std::vector<std::string>{"kh:5"});
  KnownHostsMarkers none = ScanKnownHostsMarkers(text, "kh", "elsewhere", "ssh-rsa", key);
  CHECK(none.revoked_at.empty());  // the type is part of the key
  CHECK(none.cert_authority_at.empty());
}

}  // namespace sweep::slurm
