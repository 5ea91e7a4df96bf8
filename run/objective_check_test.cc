// The objective and time-axis checks on the first trials' logs: when they speak, and what they say.
#include <catch2/catch.hpp>

#include "run/objective_check.h"

using namespace sweep;
using namespace sweep::run;

namespace {

std::vector<MetricPoint> Lines(int64_t first, int n, const std::string& name, double time_per_step = 0) {
  std::vector<MetricPoint> out;
  for (int64_t s = first; s < first + n; ++s) {
    out.push_back({s, time_per_step * static_cast<double>(s), name, 1.0});
    out.push_back({s, time_per_step * static_cast<double>(s), "lr", 1e-4});
  }
  return out;
}

}  // namespace

TEST_CASE("a misspelt objective is reported once a trial has logged enough lines, with the closest name",
          "[objective]") {
  ObjectiveCheck w("lm_los", false, 10);
  w.Saw(1, "t1", Lines(1, 9, "lm_loss"), "");
  CHECK(w.MissingObjective().empty());  // nine lines: not yet
  w.Saw(1, "t1", Lines(10, 1, "lm_loss"), "");
  std::string why = w.MissingObjective();
  CHECK_THAT(why, Catch::Contains("trial t1 logged 10 metric line(s)") && Catch::Contains("lm_loss, lr") &&
                      Catch::Contains("never the objective 'lm_los'") && Catch::Contains("did you mean 'lm_loss'"));
  // The same step logged again (a re-read after a rolled-back tick) does not count twice.
  ObjectiveCheck again("x", false, 10);
  for (int i = 0; i < 5; ++i) again.Saw(1, "t1", Lines(1, 5, "y"), "");
  CHECK(again.MissingObjective().empty());
}

TEST_CASE("the objective in any trial, or stored before a restart, keeps the run going", "[objective]") {
  ObjectiveCheck w("lm_loss", false, 10);
  w.Saw(1, "t1", Lines(1, 20, "loss"), "");
  w.Saw(2, "t2", Lines(1, 1, "lm_loss"), "");
  CHECK(w.MissingObjective().empty());
  ObjectiveCheck resumed("lm_loss", false, 10);
  resumed.ObjectiveStored();
  resumed.Saw(3, "t3", Lines(100, 20, "loss"), "");
  CHECK(resumed.MissingObjective().empty());
}

TEST_CASE("an objective logged only at the end: a trial's end decides, not its first lines", "[objective]") {
  ObjectiveCheck w("val_loss", false, 0);
  w.Saw(1, "t1", Lines(1, 50, "loss"), "");
  CHECK(w.MissingObjective().empty());
  w.Ended(2);  // a trial that logged nothing says nothing
  CHECK(w.MissingObjective().empty());
  w.Ended(1);
  CHECK_THAT(w.MissingObjective(), Catch::Contains("never the objective 'val_loss'"));
}

TEST_CASE("time rules over a log with no time axis are reported once", "[objective]") {
  ObjectiveCheck w("loss", true, 10);
  w.Saw(1, "t1", Lines(1, 10, "loss"), "");
  std::string warning = w.TakeNoTimeAxisWarning();
  CHECK_THAT(warning, Catch::Contains("trial t1") && Catch::Contains("no time axis") &&
                          Catch::Contains("cannot stop any trial") && Catch::Contains("time_s"));
  CHECK(w.TakeNoTimeAxisWarning().empty());
  CHECK(w.MissingObjective().empty());

  ObjectiveCheck timed("loss", true, 10);
  timed.Saw(1, "t1", Lines(1, 10, "loss", 0.5), "iter_time_ms");
  CHECK(timed.TakeNoTimeAxisWarning().empty());
  ObjectiveCheck no_rules("loss", false, 10);
  no_rules.Saw(1, "t1", Lines(1, 10, "loss"), "");
  CHECK(no_rules.TakeNoTimeAxisWarning().empty());
}
