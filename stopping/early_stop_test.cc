// Tests of the early-stopping rules on hand-made curves whose right answer is obvious (the
// [stopping] table's parsing: study/stopping_config_test.cc).
#include "stopping/early_stop.h"
#include "stopping/test_curves.h"

#include <catch2/catch.hpp>
#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <limits>
#include <string>
#include <vector>

namespace sweep::stopping {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

using testing::Curve;
using testing::Loss;
using testing::StallingCurve;
using testing::Trial;

std::vector<int64_t> StoppedIds(const std::vector<StopDecision>& decisions) {
  std::vector<int64_t> ids;
  for (const StopDecision& d : decisions) ids.push_back(d.trial_id);
  return ids;
}

// Loss(step) + gaussian noise of deviation `sigma` + `offset`, the same draws for a given seed.
std::function<double(int64_t)> Noisy(double sigma, double offset, unsigned seed) {
  auto draws = std::make_shared<std::vector<double>>();
  std::mt19937 rng(seed);
  std::normal_distribution<double> normal(0, sigma);
  for (int k = 0; k < 1000; ++k) draws->push_back(normal(rng));
  return [draws, offset](int64_t s) { return Loss(s) + offset + (*draws)[static_cast<size_t>(s) % draws->size()]; };
}

StoppingConfig MedianOnly(double grace_s = 10, int min_trials = 3) {
  StoppingConfig c;
  c.smoothing.kind = SmoothingKind::kNone;
  c.median.enabled = true;
  c.median.grace_s = grace_s;
  c.median.min_trials = min_trials;
  return c;
}

TEST_CASE("smoothing: a debiased EMA of a constant is the constant; running mean and none") {
  std::vector<CurvePoint> flat = {{1, 0, 5}, {2, 1, 5}, {3, 2, 5}};
  for (double v : Smooth(flat, {SmoothingKind::kEma, 0.1, 5})) CHECK(v == Approx(5));
  std::vector<CurvePoint> ramp = {{1, 0, 1}, {2, 1, 2}, {3, 2, 3}, {4, 3, kNaN}, {5, 4, 4}};
  std::vector<double> mean = Smooth(ramp, {SmoothingKind::kRunningMean, 0.3, 2});
  CHECK(mean[0] == Approx(1));
  CHECK(mean[1] == Approx(1.5));
  CHECK(mean[2] == Approx(2.5));
  CHECK(std::isnan(mean[3]));  // NaN stays visible and does not enter the average
  CHECK(mean[4] == Approx(3.5));
  CHECK(Smooth(ramp, {SmoothingKind::kNone, 0.3, 2})[2] == 3);
  // Debiasing: the first smoothed value is the first raw value, not alpha times it.
  CHECK(Smooth(ramp, {SmoothingKind::kEma, 0.3, 5})[0] == Approx(1));
}

TEST_CASE("time to target interpolates the crossing, and is empty if the target is never reached") {
  std::vector<CurvePoint> c = {{1, 0, 4}, {2, 10, 3}, {3, 20, 1}};
  Smoothing none{SmoothingKind::kNone, 1, 1};
  CHECK(*TimeToTarget(c, 2, none) == Approx(15));
  CHECK(*TimeToTarget(c, 4, none) == Approx(0));
  CHECK(*TimeToTarget(c, 3, none) == Approx(10));
  CHECK_FALSE(TimeToTarget(c, 0.5, none).has_value());
  CHECK_FALSE(TimeToTarget({}, 1, none).has_value());
  std::vector<CurvePoint> with_nan = {{1, 0, 4}, {2, 10, kNaN}, {3, 20, 2}};
  CHECK(*TimeToTarget(with_nan, 3, none) == Approx(10));  // interpolated across the NaN point
  // Smoothing delays the crossing of a one-point dip.
  std::vector<CurvePoint> dip = {{1, 0, 4}, {2, 10, 1}, {3, 20, 4}};
  CHECK(*TimeToTarget(dip, 2, none) == Approx(20.0 / 3));
  CHECK_FALSE(TimeToTarget(dip, 2, {SmoothingKind::kRunningMean, 0.3, 3}).has_value());
}

TEST_CASE("projected time: where the trial would be at its shown iteration rate") {
  std::vector<CurvePoint> c = {{10, 0, 5}, {20, 4, 4}, {30, 8, kNaN}};
  CHECK(*ProjectedTime(c, 100) == Approx(36));
  CHECK(*ProjectedTime(c, 25) == Approx(8));  // already past it: its last time
  CHECK_FALSE(ProjectedTime({{10, 0, 5}}, 100).has_value());
  CHECK_FALSE(ProjectedTime({}, 100).has_value());
}

TEST_CASE("median rule: loss at equal time, not equal iteration, decides") {
  // Four references at 1 s per iteration; `fast` has the same loss per iteration at 1.7x the
  // speed; `slow` is 3x slower per iteration with a slightly better loss per iteration.
  std::vector<TrialProgress> trials;
  for (int64_t id = 1; id <= 4; ++id) trials.push_back(Trial(id, Curve(1.0, 100)));
  trials.push_back(Trial(5, Curve(1.0 / 1.7, 100)));
  trials.push_back(Trial(6, Curve(3.0, 100, [](int64_t s) { return Loss(s) - 0.05; })));
  std::vector<StopDecision> d = EvaluateStopping(MedianOnly(), trials);
  REQUIRE(StoppedIds(d) == std::vector<int64_t>{6});
  CHECK(d[0].rule == "median");
  CHECK(d[0].reference_trials == 5);
  CHECK(d[0].value > d[0].threshold);
  CHECK(d[0].at_s == Approx(99));
  CHECK_THAT(d[0].reason, Catch::Contains("median") && Catch::Contains("of 5 trials") && Catch::Contains("t=99s"));
}

TEST_CASE("median rule: grace period, minimum of trials, ties, and only trials that reached t") {
  std::vector<TrialProgress> trials = {Trial(1, Curve(1, 30)), Trial(2, Curve(1, 30)), Trial(3, Curve(1, 30)),
                                       Trial(4, Curve(2, 30))};
  SECTION("nothing before the grace period") { CHECK(EvaluateStopping(MedianOnly(31), trials).empty()); }
  SECTION("after it, the slow one") {
    CHECK(StoppedIds(EvaluateStopping(MedianOnly(29), trials)) == std::vector<int64_t>{4});
  }
  SECTION("not with fewer other trials than min_trials") { CHECK(EvaluateStopping(MedianOnly(0, 4), trials).empty()); }
  SECTION("trials that have not reached t do not count: the comparison is at the latest common time") {
    trials[0].loss = Curve(1, 10);
    trials[1].loss = Curve(1, 10);
    // Trial 4 is at t=30 but only trial 3 reached that: with min_trials 2 it is judged at t=10,
    // the latest time two others reached, where it is already behind.
    auto d = EvaluateStopping(MedianOnly(0, 2), trials);
    REQUIRE(StoppedIds(d) == std::vector<int64_t>{4});
    CHECK_THAT(d[0].reason, Catch::Contains("t=10s"));
    CHECK(d[0].reference_trials == 3);
  }
  SECTION("the trial that started first is judged too, though it is always ahead in time") {
    // All run at once; the bad one started a little earlier, so no rival ever reaches its
    // latest time while it runs. It is compared where the rivals are.
    trials[3].loss = Curve(1, 33, [](int64_t s) { return Loss(s) + 0.5; });
    CHECK(StoppedIds(EvaluateStopping(MedianOnly(0, 3), trials)) == std::vector<int64_t>{4});
  }
  SECTION("ties are not stopped: identical curves all survive") {
    trials[3].loss = Curve(1, 30);
    CHECK(EvaluateStopping(MedianOnly(0, 1), trials).empty());
  }
  SECTION("only running trials are stopped; completed ones are references") {
    trials[3].phase = TrialPhase::kCompleted;
    CHECK(EvaluateStopping(MedianOnly(0), trials).empty());
    trials[3].phase = TrialPhase::kStopped;
    CHECK(EvaluateStopping(MedianOnly(0), trials).empty());
  }
}

TEST_CASE("trials that never log or log once are neither stopped nor references") {
  std::vector<TrialProgress> trials = {Trial(1, Curve(1, 30)), Trial(2, Curve(1, 30)), Trial(3, Curve(1, 30)),
                                       Trial(4, {}), Trial(5, {{1, 0, 99}})};
  StoppingConfig all = MedianOnly(0, 1);
  all.halving = {true, 3, 5, 0, 1};
  all.patience = {true, 5, 0, 0};
  all.throughput.enabled = true;
  all.throughput.params = {"mbs"};
  all.divergence.enabled = true;
  all.divergence.spike_factor = 2;
  CHECK(EvaluateStopping(all, trials).empty());
  // Not references either: with min_trials 3, the slow trial has only two.
  trials[2].loss = Curve(2, 30);
  CHECK(EvaluateStopping(MedianOnly(0, 3), trials).empty());
  CHECK(StoppedIds(EvaluateStopping(MedianOnly(0, 2), trials)) == std::vector<int64_t>{3});
}

TEST_CASE("a NaN in a reference curve does not poison the comparison") {
  std::vector<TrialProgress> trials = {Trial(1, Curve(1, 30)), Trial(2, Curve(1, 30)), Trial(3, Curve(1, 30)),
                                       Trial(4, Curve(2, 30))};
  trials[0].loss[10].value = kNaN;
  trials[0].phase = TrialPhase::kCompleted;
  CHECK(StoppedIds(EvaluateStopping(MedianOnly(0), trials)) == std::vector<int64_t>{4});
}

TEST_CASE("divergence: NaN at once, a bound, a spike, NaN iterations") {
  StoppingConfig c;
  c.smoothing.kind = SmoothingKind::kNone;
  c.divergence.enabled = true;
  c.divergence.grace_s = 1000;  // for the bound and the spike only
  std::vector<CurvePoint> nan = Curve(1, 20);
  nan[5].value = std::numeric_limits<double>::infinity();
  std::vector<TrialProgress> trials = {Trial(1, nan), Trial(2, Curve(1, 20))};
  std::vector<StopDecision> d = EvaluateStopping(c, trials);
  REQUIRE(StoppedIds(d) == std::vector<int64_t>{1});
  CHECK(d[0].rule == "divergence");
  CHECK_THAT(d[0].reason, Catch::Contains("inf") && Catch::Contains("step 6"));

  // A trial whose only point is NaN has no curve to compare, but is stopped all the same.
  trials = {Trial(1, {{1, 0, 10}, {2, 3, kNaN}}), Trial(2, {{1, 0, kNaN}})};
  d = EvaluateStopping(c, trials);
  REQUIRE(StoppedIds(d) == std::vector<int64_t>{1, 2});
  CHECK(d[0].at_s == 3);
  CHECK(d[1].at_s == 0);

  c.divergence.grace_s = 0;
  c.divergence.max_loss = 4.0;
  trials = {Trial(1, Curve(1, 20)), Trial(2, Curve(1, 20, [](int64_t s) { return Loss(s) + 1; }))};
  d = EvaluateStopping(c, trials);
  REQUIRE(StoppedIds(d) == std::vector<int64_t>{2});
  CHECK(d[0].threshold == 4.0);

  c.divergence.max_loss.reset();
  c.divergence.spike_factor = 10;
  std::vector<CurvePoint> spike = Curve(1, 20);
  spike.push_back({22, 21, 100});
  trials = {Trial(1, spike), Trial(2, Curve(1, 21))};
  CHECK(StoppedIds(EvaluateStopping(c, trials)) == std::vector<int64_t>{1});
  c.divergence.spike_factor = 50;
  CHECK(EvaluateStopping(c, trials).empty());

  c.divergence.spike_factor.reset();
  c.divergence.max_nan_iters = 2;
  trials = {Trial(1, Curve(1, 20)), Trial(2, Curve(1, 20))};
  trials[0].nan_iters = {{10, 9, 1}, {20, 19, 1}};
  trials[1].nan_iters = {{10, 9, 1}, {20, 19, 2}};
  CHECK(StoppedIds(EvaluateStopping(c, trials)) == std::vector<int64_t>{2});
}

TEST_CASE("race: past the best time to target without reaching it, a trial can no longer win") {
  StoppingConfig c;
  c.smoothing.kind = SmoothingKind::kNone;
  c.target_loss = 3.0;
  c.race.enabled = true;
  // Loss(step) reaches 3.0 at step 40 * ln 3 ~ 43.9. Trial 1 runs 1 step/s: there at t ~ 42.9.
  auto fast = Curve(1, 50);
  // Trial 2 runs at half the speed: at t = 50 it is at step 26, loss 3.57, not there: stopped.
  auto slow = Curve(2, 50);
  // Trial 3 has run only 40 s (started later): not past the winner's time yet.
  auto late = Curve(2, 40);
  // Trial 4 got there too, later than trial 1, and goes on (its finish still ranks it).
  auto also = Curve(1.2, 50, [](int64_t step) { return Loss(step + 5); });  // there at t ~ 45.5
  // Trial 5 never logged, trial 6 logged once (at t = 0): nothing to judge.
  std::vector<TrialProgress> trials = {Trial(1, fast), Trial(2, slow), Trial(3, late),
                                       Trial(4, also), Trial(5, {}),   Trial(6, {{1, 0, 9.0}})};
  auto d = EvaluateStopping(c, trials);
  REQUIRE(StoppedIds(d) == std::vector<int64_t>{2});
  CHECK(d[0].rule == "race");
  CHECK(d[0].threshold == 3.0);
  CHECK(d[0].value == Approx(Loss(26)));
  CHECK_THAT(d[0].reason, Catch::Contains("trial 1 reached at t="));
  // Named by key when the caller gives one: what status and the report show.
  trials[0].name = "t-00000000000a";
  CHECK_THAT(EvaluateStopping(c, trials)[0].reason, Catch::Contains("trial t-00000000000a reached at t="));
  trials[0].name.clear();

  // Slack: up to 1.25 x the winner's time (~53.6 s) a trial may still go on.
  c.race.slack = 0.25;
  CHECK(EvaluateStopping(c, trials).empty());
  c.race.slack = 0;

  // The winner may itself have been stopped or finished: its time still counts.
  trials[0].phase = TrialPhase::kCompleted;
  CHECK(StoppedIds(EvaluateStopping(c, trials)) == std::vector<int64_t>{2});
  trials[0].phase = TrialPhase::kStopped;
  CHECK(StoppedIds(EvaluateStopping(c, trials)) == std::vector<int64_t>{2});

  // Nobody there yet: nobody is stopped, however slow.
  c.target_loss = 2.5;
  CHECK(EvaluateStopping(c, trials).empty());

  // A NaN point reaches nothing.
  c.target_loss = 3.0;
  std::vector<TrialProgress> nan_first = {Trial(1, {{1, 0, 9}, {2, 10, kNaN}, {3, 20, 8}}), Trial(2, slow)};
  CHECK(EvaluateStopping(c, nan_first).empty());

  // A curve that touches the target only at its lowest point has reached it (a curve is walked for its
  // crossing unless its lowest point is above the target), and one a hair above it has not.
  auto touch = [](double lowest) {
    return Curve(1, 50, [lowest](int64_t step) { return step == 44 ? lowest : std::max(3.0 + 1e-9, Loss(step)); });
  };
  CHECK(StoppedIds(EvaluateStopping(c, {Trial(1, touch(3.0)), Trial(2, slow)})) == std::vector<int64_t>{2});
  CHECK(EvaluateStopping(c, {Trial(1, touch(3.0 + 1e-12)), Trial(2, slow)}).empty());
}

TEST_CASE("halving: at each rung the best 1/eta of those that reached it go on") {
  StoppingConfig c;
  c.smoothing.kind = SmoothingKind::kNone;
  c.halving = {true, 3, 10, 0, 3};
  std::vector<TrialProgress> trials;
  for (int64_t id = 1; id <= 6; ++id) {
    trials.push_back(Trial(id, Curve(1, 12, [id](int64_t s) { return Loss(s) + 0.1 * static_cast<double>(id); })));
  }
  SECTION("6 reached the rung at 10 s: 2 go on") {
    CHECK(StoppedIds(EvaluateStopping(c, trials)) == std::vector<int64_t>{3, 4, 5, 6});
  }
  SECTION("not before the rung") {
    for (TrialProgress& t : trials) t.loss = Curve(1, 9);
    CHECK(EvaluateStopping(c, trials).empty());
  }
  SECTION("not with fewer trials at the rung than min_trials") {
    trials.resize(2);
    CHECK(EvaluateStopping(c, trials).empty());
  }
  SECTION("ties at the cut-off go on") {
    for (TrialProgress& t : trials) t.loss = Curve(1, 12);
    CHECK(EvaluateStopping(c, trials).empty());
  }
  SECTION("the second rung is 30 s: only those that reached it compete") {
    for (int64_t id = 4; id <= 9; ++id) {
      TrialProgress t = Trial(id, Curve(1, 12, [id](int64_t s) { return Loss(s) + 0.1 * static_cast<double>(id); }));
      t.phase = TrialPhase::kCompleted;
      if (id <= 6) trials[id - 1] = t;
      else trials.push_back(t);
    }
    trials[0].loss = Curve(1, 31, [](int64_t s) { return Loss(s) + 0.05; });
    trials[1].loss = Curve(1, 31);
    trials[2].loss = Curve(1, 31, [](int64_t s) { return Loss(s) + 0.2; });
    std::vector<StopDecision> d = EvaluateStopping(c, trials);
    REQUIRE(StoppedIds(d) == std::vector<int64_t>{1, 3});
    CHECK_THAT(d[0].reason, Catch::Contains("rung at t=30s") && Catch::Contains("best 1 of 3"));
  }
  SECTION("the best live trial at a rung goes on even if better ones were stopped since") {
    trials.resize(3);
    trials[0].phase = TrialPhase::kStopped;
    trials[1].phase = TrialPhase::kStopped;
    CHECK(EvaluateStopping(c, trials).empty());
  }
}

TEST_CASE("patience: no improvement within the window") {
  StoppingConfig c;
  c.smoothing.kind = SmoothingKind::kNone;
  c.patience = {true, 10, 0.01, 0};
  std::vector<CurvePoint> plateau = Curve(1, 20);
  for (CurvePoint& p : plateau) {
    if (p.time_s > 8) p.value = 4.0;
  }
  std::vector<TrialProgress> trials = {Trial(1, plateau), Trial(2, Curve(1, 20))};
  std::vector<StopDecision> d = EvaluateStopping(c, trials);
  REQUIRE(StoppedIds(d) == std::vector<int64_t>{1});
  CHECK(d[0].rule == "patience");
  c.patience.grace_s = 25;
  CHECK(EvaluateStopping(c, trials).empty());
}

StoppingConfig ThroughputOnly() {
  StoppingConfig c;
  c.smoothing.kind = SmoothingKind::kNone;
  c.throughput.enabled = true;
  c.throughput.params = {"mbs", "tp"};
  return c;
}

TEST_CASE("throughput: the faster of two trials sharing a loss per iteration goes on") {
  // Same lr, different micro-batch size: same curve per iteration, 1.7x the speed.
  std::vector<TrialProgress> trials = {
      Trial(1, Curve(1.0, 20), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "4"}}),
      Trial(2, Curve(1.0 / 1.7, 20), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "8"}}),
  };
  std::vector<StopDecision> d = EvaluateStopping(ThroughputOnly(), trials);
  REQUIRE(StoppedIds(d) == std::vector<int64_t>{1});
  CHECK(d[0].rule == "throughput");
  CHECK_THAT(d[0].reason, Catch::Contains("trial 2") && Catch::Contains("1.70x"));
  SECTION("not within the grace period") {
    StoppingConfig c = ThroughputOnly();
    c.throughput.grace_s = 30;
    CHECK(EvaluateStopping(c, trials).empty());
  }
  SECTION("not when the speeds differ by less than rate_margin") {
    trials[1].loss = Curve(1.0 / 1.01, 20);
    CHECK(EvaluateStopping(ThroughputOnly(), trials).empty());
  }
  SECTION("not for a rival that was stopped") {
    trials[1].phase = TrialPhase::kStopped;
    CHECK(EvaluateStopping(ThroughputOnly(), trials).empty());
  }
  SECTION("a completed faster sibling counts") {
    trials[1].phase = TrialPhase::kCompleted;
    CHECK(StoppedIds(EvaluateStopping(ThroughputOnly(), trials)) == std::vector<int64_t>{1});
  }
  SECTION("a chain of siblings collapses onto the fastest") {
    trials.push_back(Trial(3, Curve(1.0 / 1.3, 20), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "6"}}));
    CHECK(StoppedIds(EvaluateStopping(ThroughputOnly(), trials)) == std::vector<int64_t>{1, 3});
  }
  SECTION("a trial with one point has no rate yet") {
    trials[0].loss.resize(1);
    CHECK(EvaluateStopping(ThroughputOnly(), trials).empty());
  }
}

TEST_CASE("throughput: 3x slower per iteration loses even with a slightly better loss per iteration") {
  std::vector<TrialProgress> trials = {
      Trial(1, Curve(1.0, 30), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "4"}}),
      Trial(2, Curve(1.0 / 1.7, 30), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "8"}}),
      // A different learning rate (not a throughput knob), 3x slower, 0.01 better per iteration.
      Trial(3, Curve(3.0, 30, [](int64_t s) { return Loss(s) - 0.01 * static_cast<double>(s > 1); }),
            TrialPhase::kRunning, {{"lr", "0.2"}, {"mbs", "4"}}),
  };
  std::vector<StopDecision> d = EvaluateStopping(ThroughputOnly(), trials);
  REQUIRE(StoppedIds(d) == std::vector<int64_t>{1, 3});
  CHECK_THAT(d[1].reason, Catch::Contains("trial 2"));
  SECTION("but not when its loss falls clearly faster per iteration") {
    trials[2].loss = Curve(3.0, 30, [](int64_t s) { return Loss(s) - 0.1 * static_cast<double>(s > 1); });
    CHECK(StoppedIds(EvaluateStopping(ThroughputOnly(), trials)) == std::vector<int64_t>{1});
  }
  SECTION("nor when the speed-up is below rival_speedup") {
    trials[2].loss = Curve(1.0 / 1.5, 30, [](int64_t s) { return Loss(s) - 0.01 * static_cast<double>(s > 1); });
    CHECK(StoppedIds(EvaluateStopping(ThroughputOnly(), trials)) == std::vector<int64_t>{1});
  }
}

TEST_CASE("throughput: as fast, but clearly worse per iteration") {
  std::vector<TrialProgress> trials = {
      Trial(1, Curve(1.0, 30), TrialPhase::kRunning, {{"lr", "0.1"}}),
      Trial(2, Curve(1.0, 30, [](int64_t s) { return 2.0 + 3.0 * std::exp(-static_cast<double>(s) / 80.0); }),
            TrialPhase::kRunning, {{"lr", "0.01"}}),
  };
  std::vector<StopDecision> d = EvaluateStopping(ThroughputOnly(), trials);
  REQUIRE(StoppedIds(d) == std::vector<int64_t>{2});
  CHECK(d[0].value > 0.02);
}

TEST_CASE("throughput: a measured prediction at the budget against what a rival will at most reach") {
  // One trial after another: trial 1 (lr 0.01) ran to the budget; trial 2, its sibling at the
  // same speed, has just started, so its loss at the budget is trial 1's. Trial 3 (another lr, a
  // slower learner per second but lower at the budget) finished lower than that.
  StoppingConfig c = ThroughputOnly();
  c.budget_s = 100;
  auto worse = [](int64_t s) { return Loss(s) + 0.3 * (1 - std::exp(-static_cast<double>(s) / 20.0)); };
  auto better = [](int64_t s) { return 1.0 + 3.0 * std::exp(-static_cast<double>(s) / 10.0); };
  std::vector<TrialProgress> trials = {
      Trial(1, Curve(1.0, 100, worse), TrialPhase::kCompleted, {{"lr", "0.01"}, {"mbs", "4"}}),
      // Just past the evidence thresholds: 10 points and 0.1 of the budget.
      Trial(2, Curve(1.0, 10, worse), TrialPhase::kRunning, {{"lr", "0.01"}, {"mbs", "2"}}),
      Trial(3, Curve(2.0, 100, better), TrialPhase::kCompleted, {{"lr", "0.1"}, {"mbs", "4"}}),
  };
  std::vector<StopDecision> d = EvaluateStopping(c, trials);
  REQUIRE(StoppedIds(d) == std::vector<int64_t>{2});
  CHECK_THAT(d[0].reason, Catch::Contains("predicted value at the budget") && Catch::Contains("iteration 101"));
  CHECK(d[0].value == Approx(worse(101)));
  CHECK(d[0].threshold == Approx(better(51)));
  c.budget_s = 0;  // no budget: no prediction
  CHECK(EvaluateStopping(c, trials).empty());
}

TEST_CASE("throughput: a trial is never stopped for a rival that fell more but is still higher than it") {
  // Found by a user: Adam (trial 1) starts low and stays low; SGD (trial 2, another optimizer,
  // 1.13x faster) starts high and falls more per iteration, yet is far higher at every iteration
  // and every time. Comparing progress alone stopped Adam, the best trial.
  auto adam = [](int64_t s) { return 0.05 + 0.25 * std::exp(-static_cast<double>(s) / 30.0); };
  auto sgd = [](int64_t s) { return 0.2 + 0.8 * std::exp(-static_cast<double>(s) / 20.0); };
  std::vector<TrialProgress> trials = {
      Trial(1, Curve(1.13, 80, adam), TrialPhase::kRunning, {{"optimizer", "adam"}}),
      Trial(2, Curve(1.0, 80, sgd), TrialPhase::kRunning, {{"optimizer", "sgd"}}),
  };
  StoppingConfig c = ThroughputOnly();
  std::vector<StopDecision> d = EvaluateStopping(c, trials);
  // SGD may well be stopped (behind and not catching up); Adam must not be.
  for (const StopDecision& x : d) CHECK(x.trial_id != 1);
  // The same curves the other way round (the lower trial also the faster): the higher one goes.
  std::vector<TrialProgress> swapped = {
      Trial(1, Curve(1.0, 80, adam), TrialPhase::kRunning, {{"optimizer", "adam"}}),
      Trial(2, Curve(2.0, 80, sgd), TrialPhase::kRunning, {{"optimizer", "sgd"}}),
  };
  c.budget_s = 80;
  CHECK(StoppedIds(EvaluateStopping(c, swapped)) == std::vector<int64_t>{2});
}

TEST_CASE("throughput: past the budget, a trial is judged on its loss at the budget, not its later one") {
  // Two learning rates, as fast and with the same progress per iteration, but trial 2 lies 0.1
  // higher. Both have run 80 s of a 50 s budget: at the budget trial 2 was at 2.94 against trial
  // 1's 2.84, so it has lost; that its loss now (2.50) is below trial 1's at the budget is no
  // reason to go on.
  StoppingConfig c = ThroughputOnly();
  c.budget_s = 50;
  auto higher = [](int64_t s) { return Loss(s) + 0.1; };
  std::vector<TrialProgress> trials = {
      Trial(1, Curve(1.0, 80), TrialPhase::kRunning, {{"lr", "0.1"}}),
      Trial(2, Curve(1.0, 80, higher), TrialPhase::kRunning, {{"lr", "0.3"}}),
  };
  std::vector<StopDecision> d = EvaluateStopping(c, trials);
  REQUIRE(StoppedIds(d) == std::vector<int64_t>{2});
  CHECK_THAT(d[0].reason, Catch::Contains("iteration 51"));
  CHECK(d[0].value == Approx(higher(51)));
  CHECK(d[0].threshold == Approx(Loss(51)));
  // Before the budget nothing is measured there yet: the rules comparing progress and predictions
  // do not decide (same progress, same speed); (6) does, on the gap at equal time that has not
  // closed in 40 s.
  std::vector<TrialProgress> before = {Trial(1, Curve(1.0, 40), TrialPhase::kRunning, {{"lr", "0.1"}}),
                                       Trial(2, Curve(1.0, 40, higher), TrialPhase::kRunning, {{"lr", "0.3"}})};
  d = EvaluateStopping(c, before);
  REQUIRE(StoppedIds(d) == std::vector<int64_t>{2});
  CHECK_THAT(d[0].reason, Catch::Contains("at equal time") && Catch::Contains("still"));
  c.throughput.lead = false;
  CHECK(EvaluateStopping(c, before).empty());
}

TEST_CASE("throughput (6): a rival lower at equal time that it is not catching up with", "[stopping]") {
  // Two learning rates, as fast, as good per iteration at first; trial 2 is 0.3 higher at equal
  // time after 30 s of a 100 s budget. Whether it goes depends on how fast the gap closes.
  StoppingConfig c = ThroughputOnly();
  c.budget_s = 100;
  auto run = [&](const std::function<double(int64_t)>& second) {
    return EvaluateStopping(c, {Trial(1, Curve(1.0, 30), TrialPhase::kRunning, {{"lr", "0.1"}}),
                                Trial(2, Curve(1.0, 30, second), TrialPhase::kRunning, {{"lr", "0.3"}})});
  };
  auto constant = [](int64_t s) { return Loss(s) + 0.3; };
  std::vector<StopDecision> d = run(constant);
  REQUIRE(StoppedIds(d) == std::vector<int64_t>{2});
  CHECK(d[0].rule == "throughput");
  CHECK_THAT(d[0].reason, Catch::Contains("trial 1 is lower by 0.3 at equal time"));
  CHECK(d[0].value == Approx(0.3));
  SECTION("not while the gap closes fast enough to be gone by the budget") {
    // 0.6 at the start, closing 0.01 a second: 0.3 at 30 s, gone by 60 s.
    CHECK(run([](int64_t s) { return Loss(s) + 0.6 * std::max(0.0, 1 - static_cast<double>(s - 1) / 60); }).empty());
    // The same gap closing at a tenth of that pace stays: 0.3 at 30 s, 0.23 at 100 s.
    CHECK(StoppedIds(run([](int64_t s) { return Loss(s) + 0.33 - 0.001 * static_cast<double>(s - 1); })) ==
          std::vector<int64_t>{2});
  }
  SECTION("not while its own descent is still getting steeper (a warm-up, no bend yet)") {
    CHECK(run([](int64_t s) { return 6.0 - 0.002 * static_cast<double>(s * s); }).empty());
  }
  SECTION("not within the curves' noise: the margin scales with it") {
    c.smoothing = {SmoothingKind::kEma, 0.3, 5};
    c.budget_s = 40;
    // Swings of +-0.8 nats about curves 0.3 apart: trial 1 is the better one.
    std::vector<TrialProgress> noisy = {
        Trial(1, Curve(1.0, 30, Noisy(0.4, 0, 2)), TrialPhase::kRunning, {{"lr", "0.1"}}),
        Trial(2, Curve(1.0, 30, Noisy(0.4, 0.3, 102)), TrialPhase::kRunning, {{"lr", "0.3"}})};
    CHECK(EvaluateStopping(c, noisy).empty());
    // Without noise margins, on these draws, the better one goes (its smoothed curve happens to
    // lie above the other's at 30 s).
    c.evidence.noise_z = 0;
    std::vector<StopDecision> wrong = EvaluateStopping(c, noisy);
    REQUIRE(StoppedIds(wrong) == std::vector<int64_t>{1});
    CHECK_THAT(wrong[0].reason, Catch::Contains("at equal time (margin"));
  }
  SECTION("against a completed trial too (one after another), whatever stalls that trial showed") {
    // Trial 1 ran to its end before trial 2 started, with a 40 s checkpoint stall at iteration
    // 50: its rate is not comparable yet, its loss at equal time is.
    std::vector<CurvePoint> done;
    double t = 0;
    for (int64_t s = 1; s <= 100; ++s) {
      done.push_back({s, t, Loss(s)});
      t += s == 50 ? 40 : 1;
    }
    d = EvaluateStopping(c, {Trial(1, done, TrialPhase::kCompleted, {{"lr", "0.1"}}),
                             Trial(2, Curve(1.0, 30, constant), TrialPhase::kRunning, {{"lr", "0.3"}})});
    CHECK(StoppedIds(d) == std::vector<int64_t>{2});
  }
  SECTION("a completed rival's margin is its noise at the time compared, not at its end (issue 30)") {
    // Trial 1 ran 100 s before trial 2 started: clean for 50 s, then swinging by +-0.1 (a loss grows
    // noisier as it falls). Trial 2 is 0.3 higher at 29 s, when trial 1 was still clean, 2 s before
    // the budget (so the closing pace, which keeps each curve's whole noise, leaves the gap open).
    c.budget_s = 31;
    c.evidence.min_points = 40;  // rates not trusted yet: only (6) may decide
    auto completed = [](int64_t noisy_from) {
      return Trial(
          1,
          Curve(1.0, 99,
                [noisy_from](int64_t s) { return Loss(s) + (s >= noisy_from ? (s % 2 == 0 ? 0.1 : -0.1) : 0); }),
          TrialPhase::kCompleted, {{"lr", "0.1"}});
    };
    TrialProgress running = Trial(2, Curve(1.0, 29, constant), TrialPhase::kRunning, {{"lr", "0.3"}});
    d = EvaluateStopping(c, {completed(51), running});
    REQUIRE(StoppedIds(d) == std::vector<int64_t>{2});
    CHECK_THAT(d[0].reason, Catch::Contains("trial 1 is lower by 0.3 at equal time (margin 0.02)"));
    // Swinging from the start, the same gap is within its noise at 29 s too.
    CHECK(EvaluateStopping(c, {completed(1), running}).empty());
    // Read at its end, as the margin was before, its noise (two standard errors) exceeds the gap.
    StoppingState state(c);
    state.Append(1, 1, completed(51).loss, {});
    CHECK(2 * state.Inspect(1)->noise > 0.3);
  }
  SECTION("not without a budget to project the gap to") {
    c.budget_s = 0;
    CHECK(run(constant).empty());
  }
  SECTION("not with lead = false") {
    c.throughput.lead = false;
    CHECK(run(constant).empty());
  }
  SECTION("not before min_loss_points (not min_points: no rate is compared), nor on two points") {
    auto cut = [&](size_t n) {
      std::vector<CurvePoint> a = Curve(1.0, 30), b = Curve(1.0, 30, constant);
      a.resize(n), b.resize(n);
      return EvaluateStopping(
          c, {Trial(1, a, TrialPhase::kRunning, {{"lr", "0.1"}}), Trial(2, b, TrialPhase::kRunning, {{"lr", "0.3"}})});
    };
    c.budget_s = 20;  // min_fraction: 2 s, reached at the third point
    REQUIRE(c.evidence.min_loss_points == 5);
    CHECK(cut(2).empty());
    CHECK(cut(4).empty());
    CHECK(StoppedIds(cut(5)) == std::vector<int64_t>{2});
    c.evidence.min_loss_points = 8;
    CHECK(cut(7).empty());
    CHECK(StoppedIds(cut(8)) == std::vector<int64_t>{2});
    c.evidence.min_loss_points = 3;
    CHECK(cut(2).empty());
    CHECK(StoppedIds(cut(3)) == std::vector<int64_t>{2});
  }
  SECTION("at the budget the measured gap decides, even on a curve still steepening") {
    // The warm-up curve above, not stopped with 70 s to go, is 0.7 higher when both reach the budget.
    // (Rates not trusted yet, so only (6), which compares loss alone, may decide.)
    c.budget_s = 30;
    c.evidence.min_points = 40;
    std::vector<StopDecision> at_budget = run([](int64_t s) { return 6.0 - 0.002 * static_cast<double>(s * s); });
    REQUIRE(StoppedIds(at_budget) == std::vector<int64_t>{2});
    CHECK_THAT(at_budget[0].reason, Catch::Contains("at the budget t=30s: trial 1 is lower by"));
    // The lower one at the budget is never the one stopped.
    std::vector<int64_t> ids = StoppedIds(EvaluateStopping(
        c, {Trial(1, Curve(1.0, 30), TrialPhase::kRunning, {{"lr", "0.1"}}),
            Trial(2, Curve(1.0, 30, [](int64_t s) { return Loss(s) - 0.1; }), TrialPhase::kRunning, {{"lr", "0.3"}})}));
    CHECK(ids == std::vector<int64_t>{1});
  }
  SECTION("few points widen the margin: a gap clear on 40 points is not on 5") {
    // Both curves swing by +-0.05 about the same shape (no smoothing: the raw noise is the
    // standard error), trial 2 higher by `gap`, both at the budget (so the gap alone decides).
    c.smoothing.kind = SmoothingKind::kNone;
    auto swinging = [](double offset) {
      return [offset](int64_t s) { return Loss(s) + offset + (s % 2 == 0 ? 0.05 : -0.05); };
    };
    auto se_of = [&](double seconds) {
      StoppingState state(c);
      state.Append(1, 1, Curve(1.0, seconds, swinging(0)), {});
      return state.Inspect(1)->se;
    };
    double se = std::max(se_of(4), se_of(39));
    REQUIRE(se > 0.1);
    // 3.4 standard errors of one curve: 2.4 of the difference, more than noise_z = 2 of it, but
    // less than the Student-t quantile with 4 degrees of freedom (2.87); more than with 39 (2.06).
    double gap = 3.4 * se;
    auto at = [&](double seconds) {
      c.budget_s = seconds;
      return EvaluateStopping(c, {Trial(1, Curve(1.0, seconds, swinging(0)), TrialPhase::kRunning, {{"lr", "0.1"}}),
                                  Trial(2, Curve(1.0, seconds, swinging(gap)), TrialPhase::kRunning, {{"lr", "0.3"}})});
    };
    CHECK(at(4).empty());
    CHECK(StoppedIds(at(39)) == std::vector<int64_t>{2});
  }
}

TEST_CASE("throughput (6): the bend is judged beyond the curve's noise, and a real steepening holds it", "[stopping]") {
  // Straight lines (neither bending nor steepening) with noise: trial 2 is 0.5 higher at equal time
  // all along. Compared without their noise, the secant slopes of a noisy straight line look
  // steeper lately on about half the draws, and the rule waited for a bend that would never come.
  StoppingConfig c = ThroughputOnly();
  c.smoothing = {SmoothingKind::kEma, 0.3, 5};
  c.budget_s = 50;
  auto line = [](double offset, double sigma, unsigned seed) {
    auto draws = std::make_shared<std::vector<double>>();
    std::mt19937 rng(seed);
    std::normal_distribution<double> normal(0, sigma);
    for (int k = 0; k < 200; ++k) draws->push_back(normal(rng));
    return [draws, offset](int64_t s) {
      return 4.0 + offset - 0.005 * static_cast<double>(s) + (*draws)[static_cast<size_t>(s) % draws->size()];
    };
  };
  for (unsigned seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    std::vector<StopDecision> d = EvaluateStopping(
        c, {Trial(1, Curve(1.0, 30, line(0, 0.02, seed)), TrialPhase::kRunning, {{"lr", "0.1"}}),
            Trial(2, Curve(1.0, 30, line(0.5, 0.02, seed + 100)), TrialPhase::kRunning, {{"lr", "0.3"}})});
    REQUIRE(StoppedIds(d) == std::vector<int64_t>{2});
    CHECK_THAT(d[0].reason, Catch::Contains("at equal time"));
  }
  SECTION("a cosine decay's late descent: steeper beyond the noise, never stopped while it steepens") {
    // Trial 2 starts 0.5 higher, and a cosine schedule's annealing drop (0.9 nats over 100 s,
    // steepest at 50 s) takes it 0.4 below trial 1 by the budget. Judged every second of the way,
    // with and without noise, it is never stopped: until its drop is under way the gap is clear
    // but its curve steepens (no bend), and by then the gap closes faster than the budget allows.
    c.budget_s = 100;
    constexpr double kPi = 3.14159265358979323846;
    for (double sigma : {0.0, 0.01}) {
      CAPTURE(sigma);
      auto base = line(0, sigma, 7);
      auto noisy = line(0, sigma, 8);
      auto cosine = [noisy](int64_t s) {
        return noisy(s) + 0.5 - 0.9 * (1 - std::cos(kPi * static_cast<double>(s - 1) / 100)) / 2;
      };
      for (double t = 5; t <= 100; t += 1) {
        CAPTURE(t);
        std::vector<StopDecision> d =
            EvaluateStopping(c, {Trial(1, Curve(1.0, t, base), TrialPhase::kRunning, {{"lr", "0.1"}}),
                                 Trial(2, Curve(1.0, t, cosine), TrialPhase::kRunning, {{"lr", "0.3"}})});
        std::vector<int64_t> ids = StoppedIds(d);
        CHECK(std::find(ids.begin(), ids.end(), 2) == ids.end());
      }
    }
  }
}

TEST_CASE("throughput (6): a steepening trial is held only while its gap to the rival may close (issue 44)",
          "[stopping]") {
  // Both trials on a warm-up (their descent still steepening), 30 s of a 100 s budget, rates not
  // trusted yet (min_points), so only (6), which compares loss at equal time, may decide.
  StoppingConfig c = ThroughputOnly();
  c.budget_s = 100;
  c.evidence.min_points = 40;
  auto warmup = [](double start, double k) {
    return [start, k](int64_t s) { return start - k * static_cast<double>(s * s); };
  };
  auto run = [&](const std::function<double(int64_t)>& rival, const std::function<double(int64_t)>& trial) {
    return EvaluateStopping(c, {Trial(1, Curve(1.0, 30, rival), TrialPhase::kRunning, {{"lr", "0.1"}}),
                                Trial(2, Curve(1.0, 30, trial), TrialPhase::kRunning, {{"lr", "0.3"}})});
  };
  SECTION("the rival steepens faster: the gap, beyond the margin a third ago, keeps widening; stopped now") {
    // Gap 0.05 + 0.001 s^2 at iteration s (t = s - 1): 0.49 at 20 s, 1.01 at 30 s. Before issue 44 the
    // steepening held it to the budget.
    std::vector<StopDecision> d = run(warmup(6, 0.003), warmup(6.05, 0.002));
    REQUIRE(StoppedIds(d) == std::vector<int64_t>{2});
    CHECK(d[0].rule == "throughput");
    CHECK_THAT(d[0].reason, Catch::Contains("trial 1 is lower by 1.011 at equal time"));
    CHECK_THAT(d[0].reason, Catch::Contains("closing at most 0 per second"));
  }
  SECTION("the gap closes while the trial steepens: held, as a schedule's late descent is") {
    // Gap 1.5 - 0.001 s^2: 1.06 at 20 s, 0.54 at 30 s, still far beyond the margin.
    CHECK(run(warmup(5, 0.001), warmup(6.5, 0.002)).empty());
  }
  // The same jitter on both curves (+-sigma, fixed draws): a noise the margins see, and no gap of its own.
  auto jittered = [](std::function<double(int64_t)> f, double sigma) {
    auto draws = std::make_shared<std::vector<double>>();
    std::mt19937 rng(7);
    std::uniform_real_distribution<double> u(-sigma, sigma);
    for (int k = 0; k < 64; ++k) draws->push_back(u(rng));
    return [f, draws](int64_t s) { return f(s) + (*draws)[static_cast<size_t>(s) % draws->size()]; };
  };
  SECTION("within its noise a third ago and opening in one steep stretch, held") {
    // The same curve to iteration 20, then the trial falls 0.01 an iteration less: 0.01 behind at
    // 20 s, within the curves' noise (jitter +-0.01), 0.11 behind at 30 s (a near-tie parting during a
    // steep early descent, which may close again: gpt-50it on GB200).
    auto rival = warmup(6, 0.002);
    auto parting = [rival](int64_t s) { return rival(s) + 0.01 * static_cast<double>(std::max<int64_t>(0, s - 20)); };
    CHECK(run(jittered(rival, 0.01), jittered(parting, 0.01)).empty());
  }
  SECTION("behind by more than the noise a third ago and widened beyond it, stopped") {
    // Quiet curves (jitter +-0.001): the trial trails by 0.012 to iteration 21 (t = 20 s, a third of the
    // window ago: beyond the noise, within the 0.02 margin), then falls 0.01 an iteration less while both
    // steepen: 0.112 behind at 30 s. Before, the margin a third ago was required, and the steepening held
    // it (moe-50it on A100).
    auto rival = warmup(6, 0.002);
    auto trailing = [rival](int64_t s) {
      return rival(s) + 0.012 + 0.01 * static_cast<double>(std::max<int64_t>(0, s - 21));
    };
    std::vector<StopDecision> d = run(jittered(rival, 0.001), jittered(trailing, 0.001));
    REQUIRE(StoppedIds(d) == std::vector<int64_t>{2});
    CHECK_THAT(d[0].reason, Catch::Contains("closing at most 0 per second"));
    SECTION("level a third ago with the same parting, held") {
      auto level = [rival](int64_t s) { return rival(s) + 0.01 * static_cast<double>(std::max<int64_t>(0, s - 21)); };
      CHECK(run(jittered(rival, 0.001), jittered(level, 0.001)).empty());
    }
  }
  SECTION("random quiet warm-ups parting after 20 s, stopped if behind beyond the noise then, else held") {
    std::mt19937 rng(4444);
    std::uniform_real_distribution<double> k(0.0015, 0.003), behind(0.013, 0.019), rate(0.005, 0.02);
    for (int draw = 0; draw < 100; ++draw) {
      // Both steepen (by 20 k per second over the window's thirds, more than the parting's rate takes).
      double kk = k(rng), d = behind(rng), r = rate(rng);
      CAPTURE(kk, d, r);
      auto rival = warmup(6, kk);
      auto parting = [rival, r](double offset) {
        return [rival, r, offset](int64_t s) {
          return rival(s) + offset + r * static_cast<double>(std::max<int64_t>(0, s - 21));
        };
      };
      CHECK(StoppedIds(run(jittered(rival, 0.001), jittered(parting(d), 0.001))) == std::vector<int64_t>{2});
      CHECK(run(jittered(rival, 0.001), jittered(parting(0), 0.001)).empty());
    }
  }
  SECTION("random warm-ups: widening beyond the margin stops, closing holds") {
    std::mt19937 rng(44);
    std::uniform_real_distribution<double> k(0.0005, 0.004), start(5, 7);
    int stopped = 0, held = 0;
    for (int draw = 0; draw < 200; ++draw) {
      double k1 = k(rng), k2 = k(rng), s1 = start(rng), s2 = start(rng);
      // Gap (s2 - s1) + (k1 - k2) s^2 at iterations 21 and 31 (t = 20 s and 30 s: the window's last third).
      auto gap = [&](double s) { return (s2 - s1) + (k1 - k2) * s * s; };
      double then = gap(21), now = gap(31);
      CAPTURE(k1, k2, s1, s2, then, now);
      std::vector<int64_t> ids = StoppedIds(run(warmup(s1, k1), warmup(s2, k2)));
      bool two_stopped = std::find(ids.begin(), ids.end(), 2) != ids.end();
      if (then > 0.1 && now > then) {
        CHECK(two_stopped);  // clearly beyond the margin and widening: no projection closes it
        ++stopped;
      } else if (now <= then) {
        CHECK_FALSE(two_stopped);  // closing (or level) while steepening: held
        ++held;
      }
    }
    CHECK(stopped > 20);
    CHECK(held > 20);
  }
}

TEST_CASE("noise: a curve's noise is the larger of its whole curve's and its recent points'", "[stopping]") {
  // 40 clean points, then 20 swinging by +-0.3 (a loss grows noisier as it falls): the median over
  // all 58 second differences is that of the clean part, but the margins must be the recent noise.
  std::vector<CurvePoint> curve;
  for (int64_t s = 1; s <= 60; ++s) {
    double swing = s > 40 ? (s % 2 == 0 ? 0.3 : -0.3) : 0;
    curve.push_back({s, static_cast<double>(s - 1), Loss(s) + swing});
  }
  StoppingState state(ThroughputOnly());
  state.Append(1, 1, curve, {});
  auto view = state.Inspect(1);
  REQUIRE(view);
  // Alternating +-0.3: second differences of 1.2, sigma = 1.4826 * 1.2 / sqrt(6).
  CHECK(view->noise == Approx(1.4826 * 1.2 / std::sqrt(6.0)).epsilon(0.01));
  curve.resize(40);
  StoppingState clean(ThroughputOnly());
  clean.Append(1, 1, curve, {});
  CHECK(clean.Inspect(1)->noise < 0.001);
}

TEST_CASE("throughput: a slower trial whose curve has flattened above a rival's present loss") {
  // Trial 2 (another lr) is half as fast and fell more per iteration than trial 1 (so no rule
  // comparing progress per iteration fires), but it has levelled off at 3.6, while trial 1 is at
  // 3.38 now and still falling. Its recent descent (-0.0023 per iteration) carried in a straight
  // line over the 15 iterations it has left before the budget still ends at 3.57.
  StoppingConfig c = ThroughputOnly();
  c.budget_s = 60;
  auto levelled = [](int64_t s) { return 3.6 + 3.0 * std::exp(-static_cast<double>(s) / 2.0); };
  std::vector<TrialProgress> trials = {
      Trial(1, Curve(1.0, 30), TrialPhase::kRunning, {{"lr", "0.1"}}),
      Trial(2, Curve(2.0, 30, levelled), TrialPhase::kRunning, {{"lr", "0.3"}}),
  };
  std::vector<StopDecision> d = EvaluateStopping(c, trials);
  REQUIRE(StoppedIds(d) == std::vector<int64_t>{2});
  CHECK_THAT(d[0].reason, Catch::Contains("straight line to iteration 31") && Catch::Contains("trial 1"));
  CHECK(d[0].value == Approx(3.567).epsilon(0.001));
  CHECK(d[0].threshold == Approx(Loss(31)));
  c.throughput.lead = false;  // (6) would stop it too: levelled above a lower rival, not catching up
  SECTION("not with extrapolate = false") {
    c.throughput.extrapolate = false;
    CHECK(EvaluateStopping(c, trials).empty());
  }
  SECTION("not when the budget lies further ahead than the curve has been observed") {
    c.budget_s = 100;  // 35 iterations ahead of the 15 it has logged
    CHECK(EvaluateStopping(c, trials).empty());
  }
  SECTION("not while its descent is still getting steeper (a warm-up, no bend yet)") {
    // At 4.72 and falling 0.135 per iteration, 5 iterations before the budget: a line would end
    // at 4.05, but an accelerating descent is no sign of where it will level off.
    c.budget_s = 40;
    trials[1].loss = Curve(2.0, 30, [](int64_t s) { return 6.0 - 0.005 * static_cast<double>(s * s); });
    CHECK(EvaluateStopping(c, trials).empty());
  }
  SECTION("not with fewer than six points") {
    trials[1].loss.resize(5);
    CHECK(EvaluateStopping(c, trials).empty());
  }
}

TEST_CASE("gpu_time axis: a trial on twice the GPUs pays for them") {
  std::vector<TrialProgress> trials = {Trial(1, Curve(1, 30)), Trial(2, Curve(1, 30)), Trial(3, Curve(1, 30)),
                                       Trial(4, Curve(1, 30))};
  trials[3].gpus = 2;
  StoppingConfig c = MedianOnly(0);
  CHECK(EvaluateStopping(c, trials).empty());
  c.axis = TimeAxis::kGpuTime;
  // After 15 s of training trial 4 has used 30 GPU-seconds, as the others after 30 s.
  trials[3].loss = Curve(1, 15);
  std::vector<StopDecision> d = EvaluateStopping(c, trials);
  REQUIRE(StoppedIds(d) == std::vector<int64_t>{4});
  CHECK(d[0].at_s == Approx(30));
}

TEST_CASE("one decision per trial, and rules after the first see it as gone") {
  StoppingConfig c = MedianOnly(0);
  c.divergence.enabled = true;
  std::vector<CurvePoint> bad = Curve(2, 30);
  bad.back().value = kNaN;
  std::vector<TrialProgress> trials = {Trial(1, Curve(1, 30)), Trial(2, Curve(1, 30)), Trial(3, Curve(1, 30)),
                                       Trial(4, bad)};
  std::vector<StopDecision> d = EvaluateStopping(c, trials);
  REQUIRE(StoppedIds(d) == std::vector<int64_t>{4});
  CHECK(d[0].rule == "divergence");
}

// ---------------------------------------------------------------------------------------------
// Evidence (issue 15): no comparison before enough points and enough of the budget, margins
// scaled by each curve's own noise, rates that must hold over stalls, and another model's trial
// a reason to stop only when it is lower at equal time.

// The curves cut to their first `points` points.
std::vector<TrialProgress> FirstPoints(std::vector<TrialProgress> trials, size_t points) {
  for (TrialProgress& t : trials) {
    if (t.loss.size() > points) t.loss.resize(points);
  }
  return trials;
}

TEST_CASE("evidence: no comparison rule decides on two points, nor before min_points", "[stopping]") {
  // Each rule with a case it decides on full curves; cut to two points each (what 8 of 9 trials
  // of a bert study were stopped on), and to one point fewer than min_points, none may decide.
  struct Case {
    std::string rule;
    StoppingConfig config;
    std::vector<TrialProgress> trials;
  };
  std::vector<Case> cases;
  {
    std::vector<TrialProgress> t;
    for (int64_t id = 1; id <= 3; ++id) t.push_back(Trial(id, Curve(1, 30)));
    t.push_back(Trial(4, Curve(1, 30, [](int64_t s) { return Loss(s) + 0.5; })));
    cases.push_back({"median", MedianOnly(0), t});
  }
  {
    StoppingConfig c;
    c.smoothing.kind = SmoothingKind::kNone;
    c.halving = {true, 3, 1, 0, 3};
    std::vector<TrialProgress> t;
    for (int64_t id = 1; id <= 6; ++id) {
      t.push_back(Trial(id, Curve(1, 30, [id](int64_t s) { return Loss(s) + 0.1 * static_cast<double>(id); })));
    }
    cases.push_back({"halving", c, t});
  }
  {
    StoppingConfig c;
    c.smoothing.kind = SmoothingKind::kNone;
    c.patience = {true, 1, 0.01, 0};
    std::vector<CurvePoint> flat;
    for (int64_t s = 1; s <= 30; ++s) flat.push_back({s, static_cast<double>(s - 1), 4.0});
    cases.push_back({"patience", c, {Trial(1, flat)}});
  }
  cases.push_back({"throughput",
                   ThroughputOnly(),
                   {Trial(1, Curve(1.0, 30), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "4"}}),
                    Trial(2, Curve(1.0 / 1.7, 30), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "8"}})}});
  cases.push_back({"throughput",
                   ThroughputOnly(),
                   {Trial(1, Curve(1.0, 30), TrialPhase::kRunning, {{"lr", "0.1"}}),
                    Trial(2, Curve(1.0, 30, [](int64_t s) { return Loss(s) + 0.5 * (s > 1); }), TrialPhase::kRunning,
                          {{"lr", "0.01"}})}});
  {
    StoppingConfig c;
    c.smoothing.kind = SmoothingKind::kNone;
    c.target_loss = Loss(1) - 0.01;  // reached at the second point by the fast trial
    c.race.enabled = true;
    cases.push_back({"race", c, {Trial(1, Curve(1, 30)), Trial(2, Curve(4, 120, [](int64_t) { return 5.0; }))}});
  }
  for (const Case& k : cases) {
    INFO(k.rule);
    std::vector<StopDecision> full = EvaluateStopping(k.config, k.trials);
    REQUIRE_FALSE(full.empty());
    CHECK(full[0].rule == k.rule);
    CHECK(EvaluateStopping(k.config, FirstPoints(k.trials, 2)).empty());
    CHECK(EvaluateStopping(k.config, FirstPoints(k.trials, k.config.evidence.min_points - 1)).empty());
    StoppingConfig fewer = k.config;
    fewer.evidence.min_points = 3;
    INFO("with min_points = 3 the same rule decides on three points, not on two");
    CHECK(EvaluateStopping(fewer, FirstPoints(k.trials, 2)).empty());
    // (A step of 0.5 nats in three points is, for all they show, noise: no cross-model stop there.)
    if (k.trials[0].params.size() != 1) CHECK_FALSE(EvaluateStopping(fewer, FirstPoints(k.trials, 3)).empty());
  }
}

TEST_CASE("evidence: nothing is compared before min_fraction of the budget has run", "[stopping]") {
  // A sibling 1.7x faster, 30 points each, but the budget is 1000 s: 30 s is 0.03 of it.
  std::vector<TrialProgress> trials = {
      Trial(1, Curve(1.0, 30), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "4"}}),
      Trial(2, Curve(1.0 / 1.7, 30), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "8"}}),
  };
  StoppingConfig c = ThroughputOnly();
  c.budget_s = 1000;
  CHECK(EvaluateStopping(c, trials).empty());
  c.evidence.min_fraction = 0.02;
  CHECK(StoppedIds(EvaluateStopping(c, trials)) == std::vector<int64_t>{1});
  c.evidence.min_fraction = 0.1;
  c.budget_s = 300;
  CHECK(StoppedIds(EvaluateStopping(c, trials)) == std::vector<int64_t>{1});
}

TEST_CASE("noise: a difference within the curves' own noise decides nothing; a clear one does", "[stopping]") {
  // Losses that swing by +-0.4 nats between steps (sigma 0.2, as Megatron's bert curves do).
  // EMA 0.3 leaves 0.42 sigma of it; two such curves differ by noise alone by up to ~0.24 at
  // two standard errors. The median rule with the old fixed comparison stopped a trial 0.1 higher.
  StoppingConfig c = MedianOnly(0);
  c.smoothing = {SmoothingKind::kEma, 0.3, 5};
  auto make = [&](double offset) {
    std::vector<TrialProgress> t;
    for (int64_t id = 1; id <= 3; ++id) t.push_back(Trial(id, Curve(1, 60, Noisy(0.2, 0, 10 + id))));
    t.push_back(Trial(4, Curve(1, 60, Noisy(0.2, offset, 99))));
    return t;
  };
  CHECK(EvaluateStopping(c, make(0.1)).empty());
  CHECK(StoppedIds(EvaluateStopping(c, make(1.0))) == std::vector<int64_t>{4});
  c.evidence.noise_z = 0;  // without noise margins the small difference decides
  CHECK_FALSE(EvaluateStopping(c, make(0.1)).empty());
}

TEST_CASE("rates: a periodic stall counts once seen, and a rate that spreads needs a larger lead", "[stopping]") {
  // Trial 1 runs 1 s per iteration but stalls 12 s every 10th iteration (a checkpoint); trial 2,
  // its sibling, runs 1.2 s per iteration without stalls. Before the first stall trial 1 looks
  // 1.2x faster; over stalls it is 0.45 it/s against 0.83.
  auto stalling = [](double seconds) { return StallingCurve(10, 12, seconds); };
  StoppingConfig c = ThroughputOnly();
  c.budget_s = 150;
  auto trials = [&](double seconds) {
    return std::vector<TrialProgress>{
        Trial(1, stalling(seconds), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "8"}}),
        Trial(2, Curve(1.2, seconds), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "4"}})};
  };
  // 9.5 s: 0.06 of the budget; the old rule stopped trial 2 here.
  CHECK(EvaluateStopping(c, trials(9.5)).empty());
  // Never trial 2, at any time: once the stalls are seen trial 1 is the slower.
  for (double at : {20.0, 40.0, 80.0, 150.0}) {
    for (int64_t id : StoppedIds(EvaluateStopping(c, trials(at)))) CHECK(id == 1);
  }
  CHECK(StoppedIds(EvaluateStopping(c, trials(150))) == std::vector<int64_t>{1});
}

TEST_CASE("rates: a sibling is stopped on rates only once they were observed as long as the budget is away",
          "[stopping]") {
  // Trial 1 runs 1 s per iteration but stalls 60 s after every 40th (an evaluation); trial 2, its
  // sibling, runs 1.2 s per iteration without stalls. The first stall comes at 40 s, past the
  // evidence's min_fraction (30 s of the 300 s budget): before it trial 1 looks 1.2x faster, over its
  // stalls it makes 0.4 it/s against 0.83 (hybrid-50it of the bench, where the sibling stopped so was
  // the best at the budget).
  auto stalling = [](double seconds) { return StallingCurve(40, 60, seconds); };
  StoppingConfig c = ThroughputOnly();
  c.budget_s = 300;
  c.throughput.lead = false;  // rule (1) alone: (6) would judge the loss at equal time
  auto trials = [&](double seconds) {
    return std::vector<TrialProgress>{
        Trial(1, stalling(seconds), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "8"}}),
        Trial(2, Curve(1.2, seconds), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "4"}})};
  };
  for (double at = 31; at <= 300; at += 1) {
    INFO("at " << at << " s");
    for (int64_t id : StoppedIds(EvaluateStopping(c, trials(at)))) CHECK(id == 1);
  }
  // Once its stalls are seen (and both rates observed for as long as the budget is away) trial 1 goes.
  CHECK(StoppedIds(EvaluateStopping(c, trials(220))) == std::vector<int64_t>{1});
  SECTION("without a stall, the faster sibling's rate decides once observed that long") {
    auto steady = [&](double seconds) {
      return std::vector<TrialProgress>{
          Trial(1, Curve(1.0, seconds), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "8"}}),
          Trial(2, Curve(1.2, seconds), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "4"}})};
    };
    CHECK(EvaluateStopping(c, steady(140)).empty());  // 140 s seen, 160 s to go
    CHECK(StoppedIds(EvaluateStopping(c, steady(151))) == std::vector<int64_t>{2});
  }
  SECTION("a study that trusts its rates further (rate_horizon) stops sooner, and so the staller's sibling too") {
    c.throughput.rate_horizon = 9;  // 31 s seen x 9 >= the 269 s to go: from min_fraction on
    auto steady = Trial(1, Curve(1.0, 31), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "8"}});
    auto slow = Trial(2, Curve(1.2, 31), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "4"}});
    CHECK(StoppedIds(EvaluateStopping(c, {steady, slow})) == std::vector<int64_t>{2});
    CHECK(StoppedIds(EvaluateStopping(c, trials(35))) == std::vector<int64_t>{2});  // the stall not shown yet
  }
}

TEST_CASE("another model's trial stops this one only if lower at equal time", "[stopping]") {
  // Trial 2 (another lr) is 2x as fast with the same progress per iteration, but starts higher:
  // how much higher decides whether it is lower at equal time (t = 30).
  StoppingConfig c = ThroughputOnly();
  auto with_offset = [](double offset) {
    return std::vector<TrialProgress>{Trial(1, Curve(2.0, 30), TrialPhase::kRunning, {{"lr", "0.1"}}),
                                      Trial(2, Curve(1.0 / 1.6, 30, [offset](int64_t s) { return Loss(s) + offset; }),
                                            TrialPhase::kRunning, {{"lr", "0.3"}})};
  };
  // Trial 1 at t=30 is at step 16 (4.01); trial 2 at step 49 (3.90 + offset).
  double equal = Loss(16) - Loss(49);
  CHECK(StoppedIds(EvaluateStopping(c, with_offset(equal - 0.2))) == std::vector<int64_t>{1});
  // Level with it (within the margin) at equal time, though much faster and as good per iteration:
  // the projection alone stopped trial 1 before.
  CHECK(EvaluateStopping(c, with_offset(equal - 0.01)).empty());
  CHECK(EvaluateStopping(c, with_offset(equal + 0.01)).empty());
}

// The same trials for an objective to maximise: every value negated, thresholds too.
StoppingConfig Maximised(StoppingConfig c) {
  c.maximize = true;
  if (c.target_loss) c.target_loss = -*c.target_loss;
  if (c.divergence.max_loss) c.divergence.max_loss = -*c.divergence.max_loss;
  return c;
}
std::vector<TrialProgress> Negated(std::vector<TrialProgress> trials) {
  for (TrialProgress& t : trials) {
    for (CurvePoint& p : t.loss) p.value = -p.value;
  }
  return trials;
}

TEST_CASE("maximise: every rule decides on -metric as on a loss, and reports the metric's own values", "[stopping]") {
  struct Case {
    std::string rule;
    StoppingConfig config;
    std::vector<TrialProgress> trials;
  };
  std::vector<Case> cases;
  {
    std::vector<TrialProgress> t;
    for (int64_t id = 1; id <= 3; ++id) t.push_back(Trial(id, Curve(1, 30)));
    t.push_back(Trial(4, Curve(1, 30, [](int64_t s) { return Loss(s) + 0.5; })));
    cases.push_back({"median", MedianOnly(0), t});
  }
  {
    StoppingConfig c;
    c.smoothing.kind = SmoothingKind::kNone;
    c.halving = {true, 3, 15, 0, 3};
    std::vector<TrialProgress> t;
    for (int64_t id = 1; id <= 6; ++id) {
      t.push_back(Trial(id, Curve(1, 30, [id](int64_t s) { return Loss(s) + 0.1 * static_cast<double>(id); })));
    }
    cases.push_back({"halving", c, t});
  }
  {
    StoppingConfig c;
    c.smoothing.kind = SmoothingKind::kNone;
    c.patience = {true, 10, 0.01, 0};
    std::vector<CurvePoint> plateau = Curve(1, 30);
    for (CurvePoint& p : plateau) {
      if (p.time_s > 8) p.value = 4.0;
    }
    cases.push_back({"patience", c, {Trial(1, plateau), Trial(2, Curve(1, 30))}});
  }
  {
    StoppingConfig c;
    c.smoothing.kind = SmoothingKind::kNone;
    c.target_loss = 3.0;
    c.race.enabled = true;
    cases.push_back({"race", c, {Trial(1, Curve(1, 50)), Trial(2, Curve(2, 50))}});
  }
  {
    StoppingConfig c;
    c.smoothing.kind = SmoothingKind::kNone;
    c.divergence.enabled = true;
    c.divergence.max_loss = 4.0;
    cases.push_back(
        {"divergence", c, {Trial(1, Curve(1, 20)), Trial(2, Curve(1, 20, [](int64_t s) { return Loss(s) + 1; }))}});
  }
  cases.push_back({"throughput",
                   ThroughputOnly(),
                   {Trial(1, Curve(1.0, 30), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "4"}}),
                    Trial(2, Curve(1.0 / 1.7, 30), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "8"}})}});
  cases.push_back({"throughput",
                   ThroughputOnly(),
                   {Trial(1, Curve(1.0, 30), TrialPhase::kRunning, {{"lr", "0.1"}}),
                    Trial(2, Curve(1.0, 30, [](int64_t s) { return Loss(s) + 0.5 * (s > 1); }), TrialPhase::kRunning,
                          {{"lr", "0.01"}})}});
  {
    StoppingConfig c = ThroughputOnly();
    c.budget_s = 60;
    auto levelled = [](int64_t s) { return 3.6 + 3.0 * std::exp(-static_cast<double>(s) / 2.0); };
    cases.push_back({"throughput",
                     c,
                     {Trial(1, Curve(1.0, 30), TrialPhase::kRunning, {{"lr", "0.1"}}),
                      Trial(2, Curve(2.0, 30, levelled), TrialPhase::kRunning, {{"lr", "0.3"}})}});
  }
  for (const Case& k : cases) {
    INFO(k.rule);
    std::vector<StopDecision> min = EvaluateStopping(k.config, k.trials);
    REQUIRE_FALSE(min.empty());
    CHECK(min[0].rule == k.rule);
    // Maximising the negated metric: the same trials stopped by the same rule.
    std::vector<StopDecision> max = EvaluateStopping(Maximised(k.config), Negated(k.trials));
    CHECK(StoppedIds(max) == StoppedIds(min));
    REQUIRE(max.size() == min.size());
    CHECK(max[0].rule == k.rule);
    if (k.rule != "throughput") {
      // Values in reasons and decisions are the metric's, not its negation.
      CHECK(max[0].value == Approx(-min[0].value));
      CHECK(max[0].threshold == Approx(-min[0].threshold));
    }
  }
}

TEST_CASE("maximise: divergence by a fall below the best / spike_factor, and NaN", "[stopping]") {
  StoppingConfig c;
  c.smoothing.kind = SmoothingKind::kNone;
  c.maximize = true;
  c.divergence.enabled = true;
  c.divergence.spike_factor = 10;
  // An accuracy that rises to 0.8 and collapses to 0.05.
  std::vector<CurvePoint> collapse;
  for (int64_t s = 1; s <= 20; ++s) collapse.push_back({s, static_cast<double>(s), 0.8 * s / 20.0});
  collapse.push_back({21, 21, 0.05});
  std::vector<CurvePoint> fine = collapse;
  fine.back().value = 0.81;
  std::vector<TrialProgress> trials = {Trial(1, collapse), Trial(2, fine)};
  std::vector<StopDecision> d = EvaluateStopping(c, trials);
  REQUIRE(StoppedIds(d) == std::vector<int64_t>{1});
  CHECK(d[0].value == Approx(0.05));
  CHECK(d[0].threshold == Approx(0.08));
  // Minimising the same numbers, the collapse is an improvement and the rise a spike.
  c.maximize = false;
  CHECK(StoppedIds(EvaluateStopping(c, trials)) == std::vector<int64_t>{2});
}

}  // namespace
}  // namespace sweep::stopping
