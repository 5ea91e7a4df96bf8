// StoppingState, the run loop's incremental early stopping: a series extended point by point and
// chunk by chunk must be the one built from the whole curve at once (what a restarted run rebuilds
// from the store), the rules must decide on it as EvaluateStopping does on the full curves, and a
// long curve must stay bounded in memory.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "stopping/early_stop.h"

namespace sweep::stopping {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// A Megatron-like curve: decaying noisy loss logged every 10 iterations, ~0.4 s an iteration with
// a stall (checkpoint) every 500 iterations, a NaN now and then, and a time glitch (a restart's
// clock going back) once.
std::vector<CurvePoint> NoisyCurve(int n, uint64_t seed, double level = 2.0) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 0.03);
  std::vector<CurvePoint> out;
  double t = 0;
  for (int k = 0; k < n; ++k) {
    int64_t step = 10 * (k + 1);
    if (k > 0) t += 10 * 0.4 * (1 + 0.05 * noise(rng)) + (step % 500 == 0 ? 30 : 0);
    double v = level + 3 * std::exp(-static_cast<double>(step) / 3000.0) + noise(rng);
    if (k % 997 == 500) v = kNaN;
    double at = k == n / 2 ? t - 5 : t;
    out.push_back({step, at, v});
  }
  return out;
}

std::vector<CurvePoint> NanIters(const std::vector<CurvePoint>& loss) {
  std::vector<CurvePoint> out;
  for (size_t k = 0; k < loss.size(); k += 7) out.push_back({loss[k].step, loss[k].time_s, k % 3 == 0 ? 1.0 : 0.0});
  return out;
}

std::vector<CurvePoint> Slice(const std::vector<CurvePoint>& v, size_t from, size_t to) {
  return {v.begin() + static_cast<std::ptrdiff_t>(std::min(from, v.size())),
          v.begin() + static_cast<std::ptrdiff_t>(std::min(to, v.size()))};
}

StoppingConfig AllRules(double budget_s) {
  StoppingConfig c;
  c.budget_s = budget_s;
  c.divergence.enabled = true;
  c.divergence.max_nan_iters = 1000000;
  c.divergence.spike_factor = 3;
  c.halving.enabled = true;
  c.halving.min_time_s = budget_s / 20;
  c.median.enabled = true;
  c.patience.enabled = true;
  c.patience.window_s = budget_s / 4;
  c.throughput.enabled = true;
  c.throughput.params = {"mbs"};
  return c;
}

TEST_CASE("stopping state: a series extended chunk by chunk is the one built from the whole curve at once",
          "[stopping]") {
  for (SmoothingKind kind : {SmoothingKind::kEma, SmoothingKind::kRunningMean}) {
    for (int n : {3, 60, 1024, 1025, 1026, 1700, 9000}) {
      StoppingConfig config = AllRules(1000);
      config.smoothing.kind = kind;
      config.axis = TimeAxis::kGpuTime;
      std::vector<CurvePoint> loss = NoisyCurve(n, static_cast<uint64_t>(n));
      std::vector<CurvePoint> nan = NanIters(loss);
      StoppingState whole(config), chunked(config);
      whole.Append(1, 8, loss, nan);
      std::mt19937_64 rng(n);
      for (size_t at = 0; at < loss.size();) {
        size_t next = std::min(loss.size(), at + 1 + rng() % 300);
        // The NaN counts logged with the points of this chunk (one every 7 points).
        chunked.Append(1, 8, Slice(loss, at, next), Slice(nan, (at + 6) / 7, (next + 6) / 7));
        // Asked between chunks, as the run loop's ticks do: it must not change what follows.
        if (rng() % 2) REQUIRE(chunked.Inspect(1).has_value());
        at = next;
      }
      INFO("points " << n << ", smoothing " << static_cast<int>(kind));
      auto a = whole.Inspect(1), b = chunked.Inspect(1);
      REQUIRE(a);
      REQUIRE(b);
      CHECK(*a == *b);
      CHECK(a->t.size() <= 1025);
    }
  }
}

TEST_CASE(
    "stopping state: what the rules see is the curve's own smoothing and integral, at every point up to 1024 "
    "and at every stride-th point beyond",
    "[stopping]") {
  StoppingConfig config;
  for (int n : {800, 1024, 9000}) {
    std::vector<CurvePoint> loss = NoisyCurve(n, 7);
    std::vector<CurvePoint> finite;
    for (const CurvePoint& p : loss) {
      if (std::isfinite(p.value)) finite.push_back(p);
    }
    std::vector<double> smoothed = Smooth(finite, config.smoothing);
    StoppingState state(config);
    state.Append(1, 1, loss, {});
    auto v = state.Inspect(1);
    REQUIRE(v);
    INFO("points " << n);
    CHECK(v->points == finite.size());
    size_t stride = 1;
    while ((finite.size() - 1) / stride + 1 > 1024) stride *= 2;
    CHECK(v->t.size() == (finite.size() - 1) / stride + 1 + ((finite.size() - 1) % stride ? 1 : 0));
    double area = 0, last_t = finite[0].time_s;
    size_t knot = 0;
    for (size_t k = 0; k < finite.size(); ++k) {
      double t = std::max(last_t, finite[k].time_s);
      if (k > 0) area += 0.5 * (smoothed[k - 1] + smoothed[k]) * (t - last_t);
      last_t = t;
      if (k % stride != 0 && k + 1 != finite.size()) continue;
      REQUIRE(knot < v->t.size());
      CHECK(v->step[knot] == finite[k].step);
      CHECK(v->t[knot] == t);
      CHECK(v->smoothed[knot] == smoothed[k]);
      CHECK(v->area_to[knot] == Approx(area).epsilon(1e-12));
      ++knot;
    }
    CHECK(knot == v->t.size());
    CHECK(v->min_smoothed == *std::min_element(smoothed.begin(), smoothed.end()));
  }
}

TEST_CASE("stopping state: tick by tick it decides as EvaluateStopping on the whole curves", "[stopping]") {
  // Twelve trials of three models and two micro-batch sizes, started together, all rules on.
  const int kTrials = 12, kPoints = 1400, kTicks = 28;
  StoppingConfig config = AllRules(kPoints * 4.0);
  std::vector<std::vector<CurvePoint>> curves;
  for (int i = 0; i < kTrials; ++i) {
    curves.push_back(NoisyCurve(kPoints, 100 + i, 2.0 + 0.05 * (i % 3)));
    if (i % 2) {  // the bigger micro-batch: 10% faster
      for (CurvePoint& p : curves.back()) p.time_s *= 0.9;
    }
  }
  curves[5][300].value = std::numeric_limits<double>::infinity();  // diverges
  StoppingState state(config);
  std::vector<TrialPhase> phase(kTrials, TrialPhase::kRunning);
  std::vector<size_t> shown(kTrials, 0);
  int decided = 0;
  for (int tick = 1; tick <= kTicks; ++tick) {
    std::vector<TrialProgress> full, meta;
    for (int i = 0; i < kTrials; ++i) {
      // A stopped trial logs nothing more; trial 0 completes at tick 20.
      size_t upto = phase[i] == TrialPhase::kRunning ? kPoints * tick / kTicks : shown[i];
      if (i == 0 && tick >= 20 && phase[i] == TrialPhase::kRunning) phase[i] = TrialPhase::kCompleted;
      state.Append(i, 1, Slice(curves[i], shown[i], upto), {});
      shown[i] = upto;
      TrialProgress p;
      p.id = i;
      p.phase = phase[i];
      p.params = {{"model", std::to_string(i % 3)}, {"mbs", std::to_string(i % 2)}};
      meta.push_back(p);
      p.loss = Slice(curves[i], 0, upto);
      full.push_back(p);
    }
    auto expected = EvaluateStopping(config, full);
    auto got = state.Evaluate(meta);
    INFO("tick " << tick);
    REQUIRE(got.size() == expected.size());
    for (size_t k = 0; k < got.size(); ++k) {
      CHECK(got[k].trial_id == expected[k].trial_id);
      CHECK(got[k].rule == expected[k].rule);
      CHECK(got[k].reason == expected[k].reason);
      phase[got[k].trial_id] = TrialPhase::kStopped;
      ++decided;
    }
  }
  // The comparison meant something: trials were stopped, by more than one rule's say.
  CHECK(decided >= 3);
  CHECK(phase[5] == TrialPhase::kStopped);
}

TEST_CASE("stopping state: a long curve holds a bounded series; Forget starts a trial anew", "[stopping]") {
  StoppingConfig config = AllRules(1000);
  StoppingState state(config);
  state.Append(1, 1, NoisyCurve(2000, 1), {});
  size_t at_2k = state.MemoryBytes();
  state.Append(2, 1, NoisyCurve(40000, 2), {});
  size_t at_40k = state.MemoryBytes() - at_2k;
  // 40k points of (step, time, value) are 960 KB; the series keeps knots and histograms.
  CHECK(at_40k < 64 * 1024);
  CHECK(at_40k < at_2k * 3 / 2);
  state.Forget(2);
  CHECK_FALSE(state.Has(2));
  state.Append(2, 1, NoisyCurve(100, 3), {});
  StoppingState fresh(config);
  fresh.Append(2, 1, NoisyCurve(100, 3), {});
  CHECK(*state.Inspect(2) == *fresh.Inspect(2));
}

}  // namespace
}  // namespace sweep::stopping
