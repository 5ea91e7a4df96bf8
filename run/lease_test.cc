// The controller's lease (lease.h) on a real study database: who may take it, when, and what a
// run that lost it learns.
#include "run/lease.h"

#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <random>

#include "tests/test_util.h"

namespace sweep::run {
namespace {

ControllerIdentity On(const std::string& host, int64_t pid) {
  ControllerIdentity me = ControllerIdentity::OfThisProcess();
  me.host = host;
  me.pid = pid;
  return me;
}

std::unique_ptr<store::Store> OpenDb(const testing::TempDir& dir) {
  auto db = store::Store::Open(dir.file("s.db"));
  REQUIRE(db.ok());
  return std::move(*db);
}

TEST_CASE("lease: a fresh lease of another host refuses, naming host, pid, heartbeat age and how to stop it",
          "[lease]") {
  testing::TempDir dir;
  auto db = OpenDb(dir);
  auto first = Lease::Take(*db, On("login1", 4242), 1000, 60);
  REQUIRE(first.ok());
  auto second = Lease::Take(*db, On("login2", 77), 1010, 60);
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == Status::Code::kFailedPrecondition);
  CHECK_THAT(second.status().message(), Catch::Contains("host login1, pid 4242, heartbeat 10 s ago") &&
                                            Catch::Contains("ssh login1 kill 4242") &&
                                            Catch::Contains("60 s old ([study] lease_timeout_s)"));
  CHECK_FALSE(Lease::Check(*db, On("login2", 77), 1010, 60).ok());
  // The holder renews (a heartbeat younger than a tenth of the timeout is not written again); its
  // lease stays and a later check still refuses.
  REQUIRE(first->Renew(1003).ok());
  CHECK(first->writes() == 0);
  REQUIRE(first->Renew(1050).ok());
  CHECK(first->writes() == 1);
  CHECK_FALSE(Lease::Take(*db, On("login2", 77), 1100, 60).ok());
}

TEST_CASE("lease: a heartbeat older than the timeout is taken over, and the old holder stops at its next renewal",
          "[lease]") {
  testing::TempDir dir;
  auto db = OpenDb(dir);
  auto first = Lease::Take(*db, On("login1", 4242), 1000, 60);
  REQUIRE(first.ok());
  std::string took_over;
  auto second = Lease::Take(*db, On("login2", 77), 1060, 60, &took_over);
  REQUIRE(second.ok());
  CHECK(took_over == "host login1, pid 4242, heartbeat 60 s ago");
  Status lost = first->Renew(1061);
  CHECK(lost.code() == Status::Code::kFailedPrecondition);
  CHECK_THAT(lost.message(), Catch::Contains("taken over (host login2, pid 77"));
  // The old holder, going away, leaves the new one's lease alone.
  { auto gone = std::move(*first); }
  auto lease = db->ReadLease();
  REQUIRE(lease.ok());
  REQUIRE(lease->has_value());
  CHECK((*lease)->host == "login2");
  CHECK(second->Renew(1070).ok());
}

TEST_CASE("lease: on the holder's own host and boot, a lease whose pid is gone is taken at once", "[lease]") {
  testing::TempDir dir;
  auto db = OpenDb(dir);
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ::waitpid(child, nullptr, 0);  // a pid that no process has now
  ControllerIdentity me = ControllerIdentity::OfThisProcess();
  auto dead = Lease::Take(*db, On(me.host, child), 1000, 600);
  REQUIRE(dead.ok());
  std::string took_over;
  auto taken = Lease::Take(*db, me, 1001, 600, &took_over);
  CHECK(taken.ok());
  CHECK_THAT(took_over, Catch::Contains("pid " + std::to_string(child)));
  // A live pid on this host holds it like any other.
  auto mine = Lease::Take(*db, me, 1002, 600);
  CHECK_FALSE(mine.ok());
}

TEST_CASE("lease: released when its run ends, so status says at once that no run goes on", "[lease]") {
  testing::TempDir dir;
  auto db = OpenDb(dir);
  {
    auto first = Lease::Take(*db, On("login1", 4242), 1000, 60);
    REQUIRE(first.ok());
    RunHolder h = FindRunHolder(*db, std::nullopt, 1003, 60);
    CHECK(h.going_on);
    CHECK(h.host == "login1");
    CHECK(h.pid == "4242");
    CHECK(*h.heartbeat_age_s == 3);
  }
  RunHolder h = FindRunHolder(*db, std::nullopt, 1004, 60);
  CHECK_FALSE(h.going_on);
  CHECK_FALSE(h.stale);
  CHECK(Lease::Take(*db, On("login2", 77), 1005, 60).ok());
}

TEST_CASE("lease: stale after kill -9 shows in status as stale, not going on", "[lease]") {
  testing::TempDir dir;
  auto db = OpenDb(dir);
  auto first = Lease::Take(*db, On("login1", 4242), 1000, 60);
  REQUIRE(first.ok());
  RunHolder h = FindRunHolder(*db, std::nullopt, 1100, 60);
  CHECK_FALSE(h.going_on);
  CHECK(h.stale);
  CHECK(h.host == "login1");
  // This host's lock is the fast path: a run here is going on whatever the lease says.
  RunHolder local = FindRunHolder(*db, std::string("99"), 1100, 60);
  CHECK(local.going_on);
  CHECK(local.pid == "99");
}

// By property: random takes, renewals and ends of three controllers on three hosts at random
// times. At every step, a take succeeds exactly when no other controller's lease has a heartbeat
// younger than the timeout, and a renewal exactly when the renewer is the last to have taken the
// lease: two controllers never both believe they hold the study.
TEST_CASE("lease: by property, at most one controller holds the study at any time", "[lease][property]") {
  std::mt19937 rng(GENERATE(1u, 2u, 3u, 4u, 5u));
  testing::TempDir dir;
  auto db = OpenDb(dir);
  constexpr double kTimeout = 30;
  struct Model {
    int holder = -1;
    double beat = 0;
  } model;
  std::vector<std::optional<Lease>> leases(3);
  double now = 1000;
  for (int step = 0; step < 300; ++step) {
    now += std::uniform_real_distribution<double>(0, kTimeout * 0.8)(rng);
    int who = static_cast<int>(rng() % 3);
    int op = static_cast<int>(rng() % 3);
    INFO("step " << step << " who " << who << " op " << op << " now " << now);
    bool free = model.holder < 0 || now - model.beat >= kTimeout;
    if (op == 0 && !leases[who]) {
      auto l = Lease::Take(*db, On("host" + std::to_string(who), 100 + who), now, kTimeout);
      CHECK(l.ok() == free);
      if (l.ok()) {
        model = {who, now};
        leases[who].emplace(std::move(*l));
      }
    } else if (op == 1 && leases[who]) {
      Status s = leases[who]->Renew(now);
      CHECK(s.ok() == (model.holder == who));
      // A heartbeat younger than a tenth of the timeout is not written again.
      if (!s.ok()) leases[who].reset();
      else if (now - model.beat >= kTimeout / 10) model.beat = now;
    } else if (op == 2 && leases[who]) {
      leases[who].reset();  // the run ends: releases if it still holds
      if (model.holder == who) model.holder = -1;
    }
  }
}

}  // namespace
}  // namespace sweep::run
