// StoppingState, the run loop's incremental early stopping: a series extended point by point and
// chunk by chunk must be the one built from the whole curve at once (what a restarted run rebuilds
// from the store), the rules must decide on it as EvaluateStopping does on the full curves, and a
// long curve must stay bounded in memory.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
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

// Trial i of a property study as the rules see it: named t<i>, each `repeats` of them one configuration.
TrialProgress ProgressOf(int i, TrialPhase phase, int repeats) {
  TrialProgress p;
  p.id = i;
  p.name = "t" + std::to_string(i);
  p.phase = phase;
  if (repeats > 1) p.configuration = "c" + std::to_string(i / repeats);
  return p;
}

// The indexed path's decisions are the reference path's, one for one: trial, rule, reason, value.
void CheckSameDecisions(const std::vector<StopDecision>& indexed, const std::vector<StopDecision>& reference) {
  REQUIRE(indexed.size() == reference.size());
  for (size_t k = 0; k < indexed.size(); ++k) {
    CHECK(indexed[k].trial_id == reference[k].trial_id);
    CHECK(indexed[k].rule == reference[k].rule);
    CHECK(indexed[k].reason == reference[k].reason);
    CHECK((indexed[k].value == reference[k].value || (std::isnan(indexed[k].value) && std::isnan(reference[k].value))));
  }
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

// Issue 42: the indexed rules (RulePath::kIndexed: the median rule's sweep, the throughput rule's floors,
// live list and index of the rivals that may be lower, lower_rivals.h) decide as the reference, pair by
// pair, on random studies: random trial counts, speeds, levels, noise, phases, repeats and budgets, every
// rule on, tick by tick with the decisions applied. Some trials are twins of the one before (the same
// curve under another configuration): rule (6)'s largest projected gap then ties, and the first rival by
// index must be the one named, whatever order the indexed path weighs them in; and twins' running
// averages tie where the median rule counts the others below its bar.
TEST_CASE("stopping state: the indexed rules decide as the reference rules on random studies", "[stopping]") {
  std::mt19937_64 rng(42);
  int decided = 0, median_stops = 0, lead_stops = 0, twin_leads = 0;
  for (int study = 0; study < 60; ++study) {
    // One study in four large enough for the median rule to judge in several batches (median_sweep.cc).
    const int trials = rng() % 4 == 0 ? 130 + static_cast<int>(rng() % 120) : 4 + static_cast<int>(rng() % 40);
    const int points = 60 + static_cast<int>(rng() % 1400);
    const int ticks = 3 + static_cast<int>(rng() % 6), repeats = 1 + static_cast<int>(rng() % 3);
    StoppingConfig config = AllRules(points * 4.0 * (0.3 + 0.01 * static_cast<double>(rng() % 100)));
    config.race.enabled = rng() % 2 == 0;
    config.target_loss = 2.1;
    config.median.quantile = rng() % 3 == 0 ? 0.25 : 0.5;
    config.median.min_trials = 1 + static_cast<int>(rng() % 4);
    config.throughput.lead = rng() % 4 != 0;
    config.throughput.extrapolate = rng() % 2 == 0;
    config.maximize = rng() % 5 == 0;
    config.evidence.min_points = 3 + static_cast<int>(rng() % 10);
    if (rng() % 3 == 0) config.smoothing.kind = SmoothingKind::kRunningMean;
    std::vector<std::vector<CurvePoint>> curves;
    std::vector<int> twin_of(trials, -1);
    for (int i = 0; i < trials; ++i) {
      if (i > 0 && rng() % 4 == 0) {
        twin_of[i] = i - 1;
        curves.push_back(curves.back());
        continue;
      }
      int config_no = i / repeats;
      double speed = 0.5 + 0.5 * static_cast<double>(rng() % 100) / 100.0;
      curves.push_back(NoisyCurve(points, rng(), 1.8 + 0.01 * static_cast<double>(config_no % 7)));
      for (CurvePoint& p : curves.back()) {
        p.time_s *= speed;
        if (config.maximize) p.value = -p.value;
      }
    }
    StoppingState state(config);
    std::vector<TrialPhase> phase(trials, TrialPhase::kRunning);
    std::vector<size_t> shown(trials, 0);
    for (int tick = 1; tick <= ticks; ++tick) {
      std::vector<TrialProgress> meta;
      for (int i = 0; i < trials; ++i) {
        size_t upto = phase[i] == TrialPhase::kRunning ? points * tick / ticks : shown[i];
        if (phase[i] == TrialPhase::kRunning && tick == ticks - 1 && rng() % 5 == 0) phase[i] = TrialPhase::kCompleted;
        state.Append(i, 1, Slice(curves[i], shown[i], upto), {});
        shown[i] = upto;
        TrialProgress p = ProgressOf(i, phase[i], repeats);
        p.params = {{"model", std::to_string((i / repeats) % 4)}, {"mbs", std::to_string((i / repeats) % 2)}};
        meta.push_back(p);
      }
      auto reference = state.Evaluate(meta, RulePath::kReference);
      auto indexed = state.Evaluate(meta, RulePath::kIndexed);
      INFO("study " << study << ", tick " << tick << ", " << trials << " trials of " << points << " points");
      CheckSameDecisions(indexed, reference);
      for (size_t k = 0; k < indexed.size(); ++k) {
        phase[indexed[k].trial_id] = TrialPhase::kStopped;
        ++decided;
        median_stops += indexed[k].rule == "median";
        bool lead = indexed[k].reason.find("at equal time (margin") != std::string::npos;
        lead_stops += lead;
        // Named rival with a twin: the tie the indexed path must break as the reference does.
        for (int j = 0; j < trials && lead; ++j) {
          if (twin_of[j] >= 0 &&
              indexed[k].reason.find("trial t" + std::to_string(twin_of[j]) + " ") != std::string::npos) {
            ++twin_leads;
          }
        }
      }
    }
  }
  // The comparison meant something: many stops, the median rule's and rule (6)'s among them.
  CHECK(decided >= 100);
  CHECK(median_stops >= 1);
  CHECK(lead_stops >= 1);
  CHECK(twin_leads >= 1);
}

// Issue 42: the median rule's batches (median_sweep.cc) count the others possibly below a trial's bar from
// lower bounds of their running averages over the batch's times; a trial near the bar must still be
// decided as the reference decides it. Hundreds of trials at one speed, their levels spread over a few
// margins, so that many are within a bound's slack of the median; twins tie; some have siblings.
TEST_CASE("stopping state: the median rule's batches decide as the reference near the bar", "[stopping]") {
  std::mt19937_64 rng(7);
  int stops = 0, stays = 0;
  for (int study = 0; study < 12; ++study) {
    const int trials = 140 + static_cast<int>(rng() % 200), points = 80 + static_cast<int>(rng() % 600);
    const int repeats = 1 + static_cast<int>(rng() % 2), ticks = 4;
    StoppingConfig config;
    config.budget_s = points * 4.0;
    config.median.enabled = true;
    config.median.quantile = rng() % 3 == 0 ? 0.25 : 0.5;
    config.maximize = rng() % 3 == 0;
    std::vector<std::vector<CurvePoint>> curves;
    for (int i = 0; i < trials; ++i) {
      if (i > 0 && rng() % 5 == 0) {
        curves.push_back(curves.back());
        continue;
      }
      curves.push_back(NoisyCurve(points, rng(), 1.8 + 0.0004 * static_cast<double>(rng() % 200)));
      for (CurvePoint& p : curves.back()) {
        if (config.maximize) p.value = -p.value;
      }
    }
    StoppingState state(config);
    std::vector<TrialPhase> phase(trials, TrialPhase::kRunning);
    std::vector<size_t> shown(trials, 0);
    for (int tick = 1; tick <= ticks; ++tick) {
      std::vector<TrialProgress> meta;
      for (int i = 0; i < trials; ++i) {
        size_t upto = phase[i] == TrialPhase::kRunning ? points * tick / ticks - rng() % 3 : shown[i];
        state.Append(i, 1, Slice(curves[i], shown[i], upto), {});
        shown[i] = std::max(shown[i], upto);
        meta.push_back(ProgressOf(i, phase[i], repeats));
      }
      auto reference = state.Evaluate(meta, RulePath::kReference);
      auto indexed = state.Evaluate(meta, RulePath::kIndexed);
      INFO("study " << study << ", tick " << tick << ", " << trials << " trials of " << points << " points");
      CheckSameDecisions(indexed, reference);
      for (size_t k = 0; k < indexed.size(); ++k) {
        // Applied one tick in two, so that the next ones judge a crowd near the median again.
        if (tick % 2 == 0) phase[indexed[k].trial_id] = TrialPhase::kStopped;
      }
      stops += static_cast<int>(indexed.size());
      stays += trials - static_cast<int>(indexed.size());
    }
  }
  CHECK(stops >= 100);
  CHECK(stays >= 100);
}

// Issue 42: on the indexed path the throughput rule passes over what cannot decide: rule (1)'s siblings slower
// than 1 + rate_margin times the trial, rules (2) and (3) when no group progressed more per iteration than the
// trial's least margin and none is rival_speedup times as fast (with few groups), rules (4) and (5) when no
// rival's bound can be below their value, and rule (6)'s rivals whose gap at equal time cannot beat the best
// lead found. Each must decide as the reference. Groups fall at different paces per iteration (so (3) fires
// and (2) does not always), speeds spread 4x (so (1) and (2) fire), some trials complete early (measured
// curves and bounds for (4) and (5)); a few groups or more than the few (the rivals then listed); repeats.
// A curve logged every 10 iterations, `per_step` seconds an iteration, for `seconds` of training time.
std::vector<CurvePoint> ShapedCurve(double seconds, uint64_t seed, double level, double drop, double pace,
                                    double per_step) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, 0.01);
  std::vector<CurvePoint> out;
  double t = 0;
  for (int64_t step = 10; t <= seconds; step += 10) {
    out.push_back({step, t, level + drop * std::exp(-static_cast<double>(step) / pace) + noise(rng)});
    t += 10 * per_step * (1 + 0.02 * noise(rng));
  }
  return out;
}

TEST_CASE("stopping state: the throughput rule's pruned comparisons decide as the reference on random studies",
          "[stopping]") {
  std::mt19937_64 rng(4242);
  std::map<std::string, int> stops;  // by the rule's part, as its reason reads
  for (int study = 0; study < 40; ++study) {
    const bool many_groups = rng() % 4 == 0;
    const int groups = many_groups ? 70 + static_cast<int>(rng() % 20) : 2 + static_cast<int>(rng() % 12);
    const int per_group = many_groups ? 1 + static_cast<int>(rng() % 2) : 2 + static_cast<int>(rng() % 5);
    const int repeats = rng() % 4 == 0 ? 2 : 1, ticks = 3 + static_cast<int>(rng() % 5);
    const double seconds = 200 + static_cast<double>(rng() % 800);
    StoppingConfig config;
    config.budget_s = seconds * (0.5 + 0.01 * static_cast<double>(rng() % 70));
    config.throughput.enabled = true;
    config.throughput.params = {"mbs"};
    config.throughput.lead = rng() % 3 != 0;
    config.throughput.extrapolate = rng() % 3 != 0;
    config.throughput.rival_speedup = std::vector<double>{0, 1.2, 1.5}[rng() % 3];
    config.throughput.rate_horizon = rng() % 2 == 0 ? 1 : 9;
    config.throughput.margin = rng() % 2 == 0 ? 0.005 : 0.02;
    config.evidence.min_points = 3 + static_cast<int>(rng() % 6);
    config.evidence.min_fraction = 0.05;
    config.maximize = rng() % 5 == 0;
    std::vector<std::vector<CurvePoint>> curves;
    std::vector<TrialProgress> meta;
    for (int g = 0; g < groups; ++g) {
      double level = 1.8 + 0.005 * static_cast<double>(rng() % 20), drop = 1 + 0.02 * static_cast<double>(rng() % 10);
      double pace = 400 + 20 * static_cast<double>(rng() % 20);
      for (int m = 0; m < per_group * repeats; ++m) {
        int mbs = m / repeats;
        double per_step = 0.02 * (1 + static_cast<double>(rng() % 4)) / std::sqrt(1.0 + mbs % 4);
        curves.push_back(ShapedCurve(seconds, rng(), level, drop, pace, per_step));
        if (config.maximize) {
          for (CurvePoint& p : curves.back()) p.value = -p.value;
        }
        TrialProgress p;
        p.id = static_cast<int64_t>(meta.size());
        p.name = "t" + std::to_string(p.id);
        p.params = {{"model", std::to_string(g)}, {"mbs", std::to_string(mbs)}};
        if (repeats > 1) p.configuration = "c" + std::to_string(g) + "-" + std::to_string(mbs);
        meta.push_back(p);
      }
    }
    const size_t trials = meta.size();
    StoppingState state(config);
    // The same study with the rule's cache of group pairs started again every two pairs: a cache, so the
    // same decisions.
    StoppingConfig small_cache = config;
    small_cache.throughput.max_cached_gaps = 2;
    StoppingState crossing(small_cache);
    std::vector<size_t> shown(trials, 0);
    for (int tick = 1; tick <= ticks; ++tick) {
      // Equal wall time: the points each trial logged by then (a completed one logs no more).
      for (size_t i = 0; i < trials; ++i) {
        size_t upto = shown[i];
        while (meta[i].phase == TrialPhase::kRunning && upto < curves[i].size() &&
               curves[i][upto].time_s <= seconds * tick / ticks) {
          ++upto;
        }
        state.Append(meta[i].id, 1, Slice(curves[i], shown[i], upto), {});
        crossing.Append(meta[i].id, 1, Slice(curves[i], shown[i], upto), {});
        shown[i] = upto;
        if (meta[i].phase == TrialPhase::kRunning && tick < ticks && rng() % 8 == 0) {
          meta[i].phase = TrialPhase::kCompleted;
        }
      }
      auto reference = state.Evaluate(meta, RulePath::kReference);
      auto indexed = state.Evaluate(meta, RulePath::kIndexed);
      INFO("study " << study << ", tick " << tick << ", " << trials << " trials in " << groups << " groups");
      CheckSameDecisions(indexed, reference);
      CheckSameDecisions(crossing.Evaluate(meta, RulePath::kIndexed), reference);
      for (const StopDecision& d : indexed) {
        meta[static_cast<size_t>(d.trial_id)].phase = TrialPhase::kStopped;
        for (const char* part : {"differs only in throughput", "improved", "predicted value at the budget",
                                 "straight line", "at equal time (margin", "at the budget t="}) {
          if (d.reason.find(part) != std::string::npos) ++stops[part];
        }
      }
    }
  }
  // Every part of the rule decided some trials, so each pruning was weighed against the reference.
  INFO("stops by part: (1) " << stops["differs only in throughput"] << ", (2)/(3) " << stops["improved"] << ", (4) "
                             << stops["predicted value at the budget"] << ", (5) " << stops["straight line"] << ", (6) "
                             << stops["at equal time (margin"] << " + " << stops["at the budget t="]);
  CHECK(stops["differs only in throughput"] >= 10);
  CHECK(stops["improved"] >= 10);
  CHECK(stops["predicted value at the budget"] >= 3);
  CHECK(stops["straight line"] >= 3);
  CHECK(stops["at equal time (margin"] >= 10);
}

// The noise marks a restart settles from the kept second differences in one pass (Series::SettleMarks)
// are those a curve logged tick by tick took one at a time: decisions of a state built at once and of one
// built point by point agree where rule (6) reads a rival's noise at an earlier time.
TEST_CASE("stopping state: a state rebuilt at once decides as one extended tick by tick", "[stopping]") {
  std::mt19937_64 rng(7);
  for (int study = 0; study < 6; ++study) {
    const int trials = 12, points = 200 + static_cast<int>(rng() % 1500);
    StoppingConfig config = AllRules(points * 3.0);
    std::vector<std::vector<CurvePoint>> curves;
    for (int i = 0; i < trials; ++i) {
      curves.push_back(NoisyCurve(points, rng(), 1.8 + 0.02 * (i % 5)));
      for (CurvePoint& p : curves.back()) p.time_s *= 0.6 + 0.05 * i;
    }
    StoppingState whole(config), ticked(config);
    std::vector<TrialProgress> meta;
    for (int i = 0; i < trials; ++i) {
      whole.Append(i, 1, curves[i], {});
      for (size_t at = 0; at < curves[i].size(); at += 7) {
        ticked.Append(i, 1, Slice(curves[i], at, at + 7), {});
        if (rng() % 9 == 0) (void)ticked.Inspect(i);  // refreshed between chunks, as ticks do
      }
      TrialProgress p;
      p.id = i;
      p.phase = i == 0 ? TrialPhase::kCompleted : TrialPhase::kRunning;
      p.params = {{"model", std::to_string(i % 3)}, {"mbs", std::to_string(i % 2)}};
      meta.push_back(p);
    }
    auto a = whole.Evaluate(meta), b = ticked.Evaluate(meta);
    INFO("study " << study << ", " << points << " points");
    REQUIRE(a.size() == b.size());
    for (size_t k = 0; k < a.size(); ++k) {
      CHECK(a[k].trial_id == b[k].trial_id);
      CHECK(a[k].reason == b[k].reason);
    }
  }
}

// The noise marks (what rule (6) reads of a rival's noise at an earlier time) are those of the curve
// when it had that many points: each is the noise a series of just those points computes, whether the
// marks were settled at once after a restart (Series::SettleMarks) or a few at a time, tick by tick.
TEST_CASE("stopping state: each noise mark is the noise of the curve's first points", "[stopping]") {
  auto mark_points = [](size_t k) -> size_t {
    if (k < 31) return k + 1;
    size_t octave = 5 + (k - 31) / 16;
    return (size_t{1} << octave) + ((k - 31) % 16) * (size_t{1} << (octave - 4));
  };
  StoppingConfig config;
  std::vector<CurvePoint> finite;
  for (const CurvePoint& p : NoisyCurve(1600, 11)) {
    if (std::isfinite(p.value)) finite.push_back(p);
  }
  StoppingState whole(config), ticked(config);
  whole.Append(1, 1, finite, {});
  for (size_t at = 0; at < finite.size(); at += 10) {
    ticked.Append(1, 1, Slice(finite, at, at + 10), {});
    (void)ticked.Inspect(1);
  }
  auto a = whole.Inspect(1), b = ticked.Inspect(1);
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->noise_marks == b->noise_marks);
  REQUIRE(a->noise_marks.size() > 100);
  for (size_t k = 0; k < a->noise_marks.size(); ++k) {
    StoppingState first(config);
    first.Append(1, 1, Slice(finite, 0, mark_points(k)), {});
    auto v = first.Inspect(1);
    REQUIRE(v);
    INFO("mark " << k << " at " << mark_points(k) << " points");
    CHECK(a->noise_marks[k] == static_cast<float>(v->noise));
  }
}

}  // namespace
}  // namespace sweep::stopping
