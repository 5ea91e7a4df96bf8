// Tests of the one definition of a trial's final objective and its smoothed curve.
#include "base/final_objective.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

namespace sweep {
namespace {

TEST_CASE("The final objective is the mean of the last 10 points, with their spread", "[report]") {
  REQUIRE(!FinalObjectiveOf({}));
  auto one = FinalObjectiveOf({5});
  REQUIRE(one->value == 5);
  REQUIRE(one->spread == 0);
  REQUIRE(one->points == 1);
  std::vector<double> v(30, 9.0);
  for (int i = 0; i < 10; ++i) v.push_back(i % 2 ? 1.0 : 3.0);  // the last ten: 3 1 3 1 ...
  auto f = FinalObjectiveOf(v);
  REQUIRE(f->value == 2.0);
  REQUIRE(f->points == 10);
  REQUIRE(f->last == 1.0);
  REQUIRE(f->spread == Approx(std::sqrt(10.0 / 9.0)));
  // A noisy curve whose last point is an outlier: the last point alone would say 1.5e-7.
  std::vector<double> swing;
  for (int i = 0; i < 40; ++i) swing.push_back(i % 2 ? 0.2 : 1.2);
  swing.push_back(1.5e-7);
  REQUIRE(FinalObjectiveOf(swing)->value > 0.5);
}

TEST_CASE("The crossing is read between the two points it lies between", "[report]") {
  // Issue 41: time to target is where the smoothed curve crosses, not the window's floor.
  CHECK(InterpolatedCrossing(100, 2.0, 200, 1.0, 1.5) == 150);
  CHECK(InterpolatedCrossing(100, 2.0, 200, 1.0, 1.9) == 110);
  CHECK(InterpolatedCrossing(10, 0.2, 20, 0.8, 0.5) == 15);  // rising (maximised): halfway
  CHECK(InterpolatedCrossing(100, std::nan(""), 200, 1.0, 1.5) == 200);
  // A fast trial: the curve falls through 1.5 within its first window (points 0..3 of 10).
  std::vector<double> loss = {3.0, 1.2, 1.0, 0.9, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8, 0.8};
  auto smoothed = TrailingMean(loss);  // 3.0, 2.1, 1.733, 1.525, 1.38, ...
  auto reached = SustainedReach(smoothed, 1.5, true);
  REQUIRE(reached == size_t{4});
  CHECK(*reached < kFinalWindow - 1);
  CHECK(InterpolatedCrossing(3, smoothed[3], 4, smoothed[4], 1.5) == 3);  // (1.525 - 1.5) / 0.145 of the way
}

TEST_CASE("A crossing counts only with the curve staying past", "[report]") {
  // Issue 31: a maximised objective got "time to target 0.31 s" from one lucky first point: the
  // trailing mean at the first point is that point alone.
  std::vector<double> acc = {0.9};
  for (int i = 1; i < 40; ++i) acc.push_back(0.3 + 0.5 * i / 39.0);  // rises to 0.8
  auto smoothed = TrailingMean(acc);
  REQUIRE(smoothed[0] >= 0.7);
  auto reached = SustainedReach(smoothed, 0.7, false);
  REQUIRE(reached);
  CHECK(*reached > kFinalWindow);
  for (size_t i = *reached; i < smoothed.size(); ++i) CHECK(smoothed[i] >= 0.7);
  CHECK(smoothed[*reached - 1] < 0.7);
  // A dip past the target that the curve climbs back out of is no crossing; the later one is.
  std::vector<double> loss(60, 2.0);
  for (size_t i = 15; i < 25; ++i) loss[i] = 1.0;  // smoothed down to 1.0 at i = 24
  for (size_t i = 45; i < 60; ++i) loss[i] = 1.0;
  smoothed = TrailingMean(loss);
  REQUIRE(smoothed[24] == 1.0);
  CHECK(SustainedReach(smoothed, 1.5, true) == size_t{49});  // (5 x 2 + 5 x 1) / 10 = 1.5
  CHECK(!SustainedReach(smoothed, 0.9, true));
  CHECK(!SustainedReach({}, 1.0, true));
}

TEST_CASE("A curve reaches a target equal to its own final value, at the same window", "[report]") {
  // A noisy curve whose trailing mean only gets down to its final value at the very end.
  std::vector<double> v;
  for (int i = 0; i < 997; ++i) v.push_back(3.0 + 1.0 / (1 + i * 0.01) + 0.1 * std::sin(i * 0.7));
  double target = FinalObjectiveOf(v)->value;
  auto smoothed = TrailingMean(v);
  REQUIRE(smoothed.size() == v.size());
  REQUIRE(smoothed.front() == v.front());
  REQUIRE(smoothed.back() == target);  // bit for bit
  REQUIRE(smoothed[5] == Approx((v[0] + v[1] + v[2] + v[3] + v[4] + v[5]) / 6));
  REQUIRE(smoothed[20] == Approx((v[11] + v[12] + v[13] + v[14] + v[15] + v[16] + v[17] + v[18] + v[19] + v[20]) / 10));
  auto reached = SustainedReach(smoothed, target, true);
  REQUIRE(reached);
  REQUIRE(!SustainedReach(smoothed, target - 1, true));
  // Every point past it: reached at the first point, not at the window's floor (issue 41).
  REQUIRE(SustainedReach(smoothed, 100, true) == size_t{0});
  // Maximising: reaching means getting above, and the final value is reached too. A trial shorter
  // than the window reaches a lower target where its smoothed curve gets there (0.1, 0.15, 0.267,
  // 0.35, ...), not at its last point.
  std::vector<double> acc = {0.1, 0.2, 0.5, 0.6, 0.7, 0.65, 0.72};
  REQUIRE(SustainedReach(TrailingMean(acc), FinalObjectiveOf(acc)->value, false) == size_t{6});
  REQUIRE(SustainedReach(TrailingMean(acc), 0.35, false) == size_t{3});
  // A NaN (diverged) reaches nothing, and spoils only the windows that hold it.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  REQUIRE(!SustainedReach(TrailingMean({nan}), 1e9, true));
  std::vector<double> spike(40, 1.0);
  spike[10] = nan;
  auto s = TrailingMean(spike);
  REQUIRE(std::isnan(s[10]));
  REQUIRE(std::isnan(s[19]));
  REQUIRE(s[20] == 1.0);
  REQUIRE(std::isnan(FinalObjectiveOf({1, 2, nan})->value));
}

TEST_CASE("Better orders objective values by the study's direction, NaN last", "[report]") {
  REQUIRE(Better(1, 2, true));
  REQUIRE(Better(2, 1, false));
  REQUIRE(!Better(std::nan(""), 1, true));
  REQUIRE(Better(1, std::nan(""), false));
}

}  // namespace
}  // namespace sweep
