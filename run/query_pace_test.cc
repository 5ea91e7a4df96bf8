#include "run/query_pace.h"

#include <catch2/catch.hpp>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "tests/test_util.h"

using namespace sweep;
using namespace sweep::run;

TEST_CASE("QueryPace: studies sharing a cluster get slots one gap apart", "[budget]") {
  testing::TempDir dir;
  std::string path = dir.file("budget/q");
  auto a = QueryPace::Open(path, 0.5);
  auto b = QueryPace::Open(path, 0.5);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  // Both ask at the same moment, again and again: the slots interleave, 0.5 s apart.
  double now = 1000;
  std::vector<double> waits;
  for (int i = 0; i < 3; ++i) {
    waits.push_back(a->Reserve(now).value());
    waits.push_back(b->Reserve(now).value());
  }
  for (size_t i = 0; i < waits.size(); ++i) CHECK(waits[i] == Approx(0.5 * i));
  // Once the slots are in the past, the next one is now.
  CHECK(a->Reserve(now + 100).value() == 0);
  CHECK(b->Reserve(now + 100).value() == Approx(0.5));
}

TEST_CASE("QueryPace: another process shares the pace", "[budget]") {
  testing::TempDir dir;
  std::string path = dir.file("q");
  int pipefd[2];
  REQUIRE(pipe(pipefd) == 0);
  pid_t pid = fork();
  if (pid == 0) {
    auto mine = QueryPace::Open(path, 1.0);
    double sum = 0;
    for (int i = 0; i < 5; ++i) {
      auto w = mine.ok() ? mine->Reserve(5000) : Result<double>(-1000.0);
      sum += w.ok() ? *w : -1000;
    }
    ssize_t ignored = write(pipefd[1], &sum, sizeof sum);
    (void)ignored;
    _exit(0);
  }
  auto mine = QueryPace::Open(path, 1.0);
  REQUIRE(mine.ok());
  double sum = 0;
  for (int i = 0; i < 5; ++i) sum += mine->Reserve(5000).value();
  double child = -1;
  REQUIRE(read(pipefd[0], &child, sizeof child) == sizeof child);
  int status = 0;
  waitpid(pid, &status, 0);
  // Ten reservations at the same moment from two processes: waits 0, 1, ..., 9 in some order.
  CHECK(sum + child == Approx(45));
}

TEST_CASE("QueryPace: no pacing at gap 0; a corrupt or far-future file does not stall", "[budget]") {
  testing::TempDir dir;
  auto off = QueryPace::Open(dir.file("off"), 0);
  REQUIRE(off.ok());
  for (int i = 0; i < 3; ++i) CHECK(off->Reserve(10).value() == 0);
  testing::WriteAll(dir.file("bad"), "9999999999999\n");
  auto bad = QueryPace::Open(dir.file("bad"), 1);
  REQUIRE(bad.ok());
  CHECK(bad->Reserve(10).value() == 0);
  testing::WriteAll(dir.file("junk"), "not a number");
  auto junk = QueryPace::Open(dir.file("junk"), 1);
  REQUIRE(junk.ok());
  CHECK(junk->Reserve(10).value() == 0);
}
