// Tests of the run loop's polling waits: short after changes, longer while quiet, capped,
// backing off while the cluster is away, jittered.
#include <catch2/catch.hpp>

#include "run/poll_schedule.h"

using sweep::run::PollSchedule;

TEST_CASE("polling speeds up after a change and slows down while nothing changes", "[poll]") {
  PollSchedule s(2, 30, 1);
  double first = s.Next(true, false);
  CHECK(first == Approx(2).epsilon(0.11));
  double prev = first;
  double last = 0;
  for (int i = 0; i < 20; ++i) {
    last = s.Next(false, false);
    CHECK(last <= 30 * 1.1);
    if (i < 3) CHECK(last > prev);  // grows
    prev = last;
  }
  CHECK(last == Approx(30).epsilon(0.11));                // capped
  CHECK(s.Next(true, false) == Approx(2).epsilon(0.11));  // a change brings it back at once
}

TEST_CASE("an unreachable cluster is polled ever more slowly, up to two minutes", "[poll]") {
  PollSchedule s(1, 10, 7);
  double prev = 0;
  for (int i = 0; i < 4; ++i) {
    double w = s.Next(false, true);
    CHECK(w > prev);
    prev = w;
  }
  for (int i = 0; i < 20; ++i) CHECK(s.Next(false, true) <= 120 * 1.1);
  CHECK(s.Next(false, true) == Approx(120).epsilon(0.11));
  // Back to normal once it answers again.
  CHECK(s.Next(true, false) == Approx(1).epsilon(0.11));
}

TEST_CASE("waits are jittered so orchestrators do not poll in lock-step", "[poll]") {
  PollSchedule a(5, 5, 1), b(5, 5, 2);
  int differ = 0;
  for (int i = 0; i < 10; ++i) differ += a.Next(false, false) != b.Next(false, false);
  CHECK(differ >= 9);
}
