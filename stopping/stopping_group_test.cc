// Repeats over seeds (TrialProgress::configuration): no rule judges a trial against its siblings,
// in one evaluation. Each comparing rule on a scenario where it stops a trial for one rival's sake:
// with that rival a sibling the trial goes on; with a copy of the rival in another configuration it
// is stopped again, by the same numbers. Then random studies against the reference the run loop
// used before: one evaluation per running trial, in a view without its siblings.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "stopping/early_stop.h"
#include "stopping/test_curves.h"

namespace sweep::stopping {
namespace {

using testing::Curve;
using testing::Loss;
using testing::Trial;

std::optional<StopDecision> DecisionFor(const StoppingConfig& c, const std::vector<TrialProgress>& trials, int64_t id) {
  for (const StopDecision& d : EvaluateStopping(c, trials)) {
    if (d.trial_id == id) return d;
  }
  return std::nullopt;
}

TrialProgress& ById(std::vector<TrialProgress>& trials, int64_t id) {
  return *std::find_if(trials.begin(), trials.end(), [&](const TrialProgress& t) { return t.id == id; });
}

// `rule` stops `victim` for `rival`'s sake in `trials`. As siblings, the victim is not stopped (by any
// rule); with a copy of the rival (id 99) in another configuration it is, as without configurations.
void CheckApart(const StoppingConfig& c, std::vector<TrialProgress> trials, int64_t victim, int64_t rival,
                const std::string& rule) {
  auto plain = DecisionFor(c, trials, victim);
  REQUIRE(plain);
  CHECK(plain->rule == rule);
  ById(trials, victim).configuration = "X";
  ById(trials, rival).configuration = "X";
  auto apart = DecisionFor(c, trials, victim);
  CHECK_FALSE(apart);
  if (apart) UNSCOPED_INFO("stopped by its sibling: " << apart->reason);
  TrialProgress copy = ById(trials, rival);
  copy.id = 99;
  copy.configuration = "Y";
  trials.push_back(copy);
  auto again = DecisionFor(c, trials, victim);
  REQUIRE(again);
  CHECK(again->rule == rule);
  CHECK(again->value == plain->value);
  CHECK(again->threshold == plain->threshold);
  CHECK(again->reference_trials == plain->reference_trials);
}

StoppingConfig Plain() {
  StoppingConfig c;
  c.smoothing.kind = SmoothingKind::kNone;
  return c;
}

TEST_CASE("repeats: race, a sibling's time to target is no reason to stop", "[stopping][repeats]") {
  StoppingConfig c = Plain();
  c.target_loss = 3.0;
  c.race.enabled = true;
  CheckApart(c, {Trial(1, Curve(1, 50)), Trial(2, Curve(2, 50))}, 2, 1, "race");
}

TEST_CASE("repeats: halving ranks a trial among other configurations only", "[stopping][repeats]") {
  StoppingConfig c = Plain();
  c.halving = {true, 3, 10, 0, 2};
  std::vector<TrialProgress> trials;
  for (int64_t id = 1; id <= 3; ++id) {
    trials.push_back(Trial(id, Curve(1, 12, [id](int64_t s) { return Loss(s) + 0.1 * static_cast<double>(id); })));
  }
  CheckApart(c, trials, 2, 1, "halving");
  // Trial 2 is ranked without its sibling (1 of 2 trials); trial 3, of a third configuration, among
  // both (1 of 3), and goes.
  trials[0].configuration = trials[1].configuration = "X";
  auto d = EvaluateStopping(c, trials);
  REQUIRE(d.size() == 1);
  CHECK(d[0].trial_id == 3);
  CHECK_THAT(d[0].reason, Catch::Contains("best 1 of 3 trials"));
  // With min_trials 3, trial 2 has too few others at the rung to be ranked at all.
  c.halving.min_trials = 3;
  trials[2].configuration = "X";
  CHECK(EvaluateStopping(c, trials).empty());
}

TEST_CASE("repeats: the median rule's others are other configurations", "[stopping][repeats]") {
  StoppingConfig c = Plain();
  c.median.enabled = true;
  c.median.grace_s = 1;
  c.median.min_trials = 1;
  auto flat = [](double v) { return [v](int64_t s) { return v + 0 * static_cast<double>(s); }; };
  CheckApart(c,
             {Trial(1, Curve(1, 20, flat(1.0))), Trial(2, Curve(1, 20, flat(2.0))), Trial(3, Curve(1, 20, flat(2.5)))},
             2, 1, "median");
}

StoppingConfig ThroughputOnly() {
  StoppingConfig c = Plain();
  c.throughput.enabled = true;
  c.throughput.params = {"mbs", "tp"};
  return c;
}

TEST_CASE("repeats: throughput, each of its comparisons takes rivals from other configurations",
          "[stopping][repeats]") {
  SECTION("(1) a faster trial sharing its loss per iteration") {
    CheckApart(ThroughputOnly(),
               {Trial(1, Curve(1.0, 20), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "4"}}),
                Trial(2, Curve(1.0 / 1.7, 20), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "8"}})},
               1, 2, "throughput");
  }
  SECTION("(2) a much faster rival that progresses no worse") {
    CheckApart(ThroughputOnly(),
               {Trial(2, Curve(1.0 / 1.7, 30), TrialPhase::kRunning, {{"lr", "0.1"}, {"mbs", "8"}}),
                Trial(3, Curve(3.0, 30, [](int64_t s) { return Loss(s) - 0.01 * static_cast<double>(s > 1); }),
                      TrialPhase::kRunning, {{"lr", "0.2"}, {"mbs", "4"}})},
               3, 2, "throughput");
  }
  SECTION("(3) as fast, clearly better per iteration") {
    CheckApart(ThroughputOnly(),
               {Trial(1, Curve(1.0, 30), TrialPhase::kRunning, {{"lr", "0.1"}}),
                Trial(2, Curve(1.0, 30, [](int64_t s) { return 2.0 + 3.0 * std::exp(-static_cast<double>(s) / 80.0); }),
                      TrialPhase::kRunning, {{"lr", "0.01"}})},
               2, 1, "throughput");
  }
  auto worse = [](int64_t s) { return Loss(s) + 0.3 * (1 - std::exp(-static_cast<double>(s) / 20.0)); };
  auto better = [](int64_t s) { return 1.0 + 3.0 * std::exp(-static_cast<double>(s) / 10.0); };
  StoppingConfig c = ThroughputOnly();
  c.budget_s = 100;
  std::vector<TrialProgress> budget = {
      Trial(1, Curve(1.0, 100, worse), TrialPhase::kCompleted, {{"lr", "0.01"}, {"mbs", "4"}}),
      Trial(2, Curve(1.0, 10, worse), TrialPhase::kRunning, {{"lr", "0.01"}, {"mbs", "2"}}),
      Trial(3, Curve(2.0, 100, better), TrialPhase::kCompleted, {{"lr", "0.1"}, {"mbs", "4"}}),
  };
  SECTION("(4) a measured prediction at the budget against a rival's bound") {
    CheckApart(c, budget, 2, 3, "throughput");
  }
  SECTION("(4) a trial's prediction is never a sibling's measured curve") {
    // Trial 1 measured the curve per iteration of trial 2's group to the budget; as trial 2's
    // sibling it is not a measurement of the group in trial 2's view, so nothing is predicted.
    auto d = DecisionFor(c, budget, 2);
    REQUIRE(d);
    CHECK_THAT(d->reason, Catch::Contains("predicted value at the budget"));
    budget[0].configuration = budget[1].configuration = "X";
    d = DecisionFor(c, budget, 2);
    if (d) CHECK_THAT(d->reason, !Catch::Contains("predicted value at the budget"));
    // Measured by a trial of another configuration in its group, it is again.
    TrialProgress other = budget[0];
    other.id = 4;
    other.configuration = "Z";
    budget.push_back(other);
    d = DecisionFor(c, budget, 2);
    REQUIRE(d);
    CHECK_THAT(d->reason, Catch::Contains("predicted value at the budget"));
  }
  SECTION("(6) a rival lower at equal time that it is not catching up with") {
    c.budget_s = 100;
    CheckApart(
        c,
        {Trial(1, Curve(1.0, 30), TrialPhase::kRunning, {{"lr", "0.1"}}),
         Trial(2, Curve(1.0, 30, [](int64_t s) { return Loss(s) + 0.3; }), TrialPhase::kRunning, {{"lr", "0.3"}})},
        2, 1, "throughput");
  }
}

// ---------------------------------------------------------------------------------------------
// Random studies

// The run loop's way before the rules knew configurations (and stopping_tick_bench's --per-view):
// each running trial judged in a view without its siblings, its own decision kept, a trial stopped
// in one view counting as stopped in the views after it.
std::vector<StopDecision> PerView(const StoppingConfig& c, std::vector<TrialProgress> trials) {
  std::vector<StopDecision> out;
  for (size_t i = 0; i < trials.size(); ++i) {
    if (trials[i].phase != TrialPhase::kRunning) continue;
    std::vector<TrialProgress> view;
    for (size_t j = 0; j < trials.size(); ++j) {
      if (j == i || trials[i].configuration.empty() || trials[j].configuration != trials[i].configuration) {
        view.push_back(trials[j]);
        view.back().configuration.clear();
      }
    }
    for (const StopDecision& d : EvaluateStopping(c, view)) {
      if (d.trial_id != trials[i].id) continue;
      out.push_back(d);
      trials[i].phase = TrialPhase::kStopped;
    }
  }
  return out;
}

bool Same(const StopDecision& a, const StopDecision& b) {
  return a.trial_id == b.trial_id && a.rule == b.rule && a.reason == b.reason && a.at_s == b.at_s &&
         a.value == b.value && a.threshold == b.threshold && a.reference_trials == b.reference_trials;
}

// Every rule on, with room to decide on short curves.
StoppingConfig AllRules() {
  StoppingConfig c;
  c.budget_s = 100;
  c.target_loss = 2.6;
  c.divergence.enabled = true;
  c.race.enabled = true;
  c.halving = {true, 3, 10, 0, 3};
  c.median.enabled = true;
  c.median.grace_s = 5;
  c.median.min_trials = 2;
  c.patience.enabled = true;
  c.patience.window_s = 40;
  c.throughput.enabled = true;
  c.throughput.params = {"mbs"};
  return c;
}

// A random study: 2 to 12 trials of a few configurations (a configuration's repeats share their
// parameters, speed and level, each with its own noise), each logged at a steady pace (no stalls:
// a stall would raise the evidence a rival needs, in the view without siblings or not, see below).
std::vector<TrialProgress> RandomStudy(std::mt19937& rng, bool one_running) {
  std::uniform_int_distribution<int> trials_n(2, 12);
  std::uniform_real_distribution<double> u(0, 1);
  int n = trials_n(rng);
  int configs = std::uniform_int_distribution<int>(1, n)(rng);
  struct Config {
    double speed, level, decay;
    std::string lr, mbs;
  };
  std::vector<Config> pool;
  for (int k = 0; k < configs; ++k) {
    pool.push_back(
        {0.5 + 1.5 * u(rng), 0.3 * u(rng), 20 + 60 * u(rng), std::to_string(k % 3), std::to_string(1 << (k % 2))});
  }
  std::vector<TrialProgress> out;
  int running = std::uniform_int_distribution<int>(0, n - 1)(rng);
  for (int i = 0; i < n; ++i) {
    int k = std::uniform_int_distribution<int>(0, configs - 1)(rng);
    const Config& g = pool[k];
    double sigma = 0.05 * u(rng);
    std::normal_distribution<double> noise(0, sigma > 0 ? sigma : 1e-9);
    double seconds = 20 + 110 * u(rng);
    std::vector<CurvePoint> curve;
    for (int64_t step = 1;; step += 2) {
      double t = static_cast<double>(step - 1) / g.speed;
      if (t > seconds) break;
      curve.push_back({step, t, 2.0 + g.level + 3.0 * std::exp(-static_cast<double>(step) / g.decay) + noise(rng)});
    }
    TrialPhase phase = TrialPhase::kRunning;
    if (one_running ? i != running : u(rng) < 0.3) phase = u(rng) < 0.7 ? TrialPhase::kCompleted : TrialPhase::kStopped;
    TrialProgress t = Trial(i + 1, std::move(curve), phase, {{"lr", g.lr}, {"mbs", g.mbs}});
    t.name = "t" + std::to_string(i + 1);
    t.configuration = "c" + std::to_string(k);
    out.push_back(std::move(t));
  }
  return out;
}

TEST_CASE("repeats, random studies: distinct configurations decide as none; one evaluation as a view per trial",
          "[stopping][repeats]") {
  std::mt19937 rng(29);
  StoppingConfig c = AllRules();
  std::map<std::string, int> fired;  // rule -> decisions seen in the one-pass evaluations
  int with_siblings = 0;
  for (int round = 0; round < 300; ++round) {
    // (a) Every trial a configuration of its own: the decisions of a study without repeats.
    std::vector<TrialProgress> study = RandomStudy(rng, false);
    std::vector<TrialProgress> none = study, distinct = study;
    for (size_t i = 0; i < study.size(); ++i) {
      none[i].configuration.clear();
      distinct[i].configuration = "own" + std::to_string(i);
    }
    auto a = EvaluateStopping(c, none), b = EvaluateStopping(c, distinct);
    REQUIRE(a.size() == b.size());
    for (size_t k = 0; k < a.size(); ++k) CHECK(Same(a[k], b[k]));

    // (b) One running trial: the one evaluation decides for it exactly as the view without its siblings.
    std::vector<TrialProgress> one = RandomStudy(rng, true);
    auto once = EvaluateStopping(c, one), viewed = PerView(c, one);
    std::map<std::string, int> sizes;
    for (const TrialProgress& t : one) ++sizes[t.configuration];
    bool siblings = std::any_of(sizes.begin(), sizes.end(), [](const auto& s) { return s.second > 1; });
    with_siblings += siblings;
    REQUIRE(once.size() == viewed.size());
    for (size_t k = 0; k < once.size(); ++k) {
      INFO("round " << round << ": " << once[k].reason << " / " << viewed[k].reason);
      CHECK(Same(once[k], viewed[k]));
      if (siblings) ++fired[once[k].rule];
    }

    // Several running: the rules' order (each rule over every trial, a trial stopped by one no longer
    // a live rival for the next) is not the views' (every rule for one trial at a time), so the
    // decisions may differ in which third trials still count as live; no trial is ever stopped for
    // a sibling's sake: a rival a decision names is of another configuration.
    std::map<std::string, std::string> config_of;
    for (const TrialProgress& t : study) config_of[t.name] = t.configuration;
    for (const StopDecision& d : EvaluateStopping(c, study)) {
      const TrialProgress& me =
          *std::find_if(study.begin(), study.end(), [&](const TrialProgress& t) { return t.id == d.trial_id; });
      for (const auto& [name, config] : config_of) {
        if (d.reason.find("trial " + name + " ") != std::string::npos) CHECK(config != me.configuration);
      }
    }
  }
  // Not vacuous: studies with siblings, and every comparing rule decided in some of them.
  CHECK(with_siblings > 100);
  for (const auto& [rule, n] : fired) UNSCOPED_INFO(rule << ": " << n);
  for (const char* rule : {"race", "halving", "median", "throughput"}) {
    INFO(rule);
    CHECK(fired[rule] > 0);
  }
}

}  // namespace
}  // namespace sweep::stopping
