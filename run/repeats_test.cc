// Tests of configurations over seeds in the application: the template must use the seed, tpe
// sees a configuration's repeats as one point, early stopping never judges a repeat against its
// siblings, and trials added by --repeat-top are the study's own.
#include <catch2/catch.hpp>

#include "run/tpe_trials.h"
#include "stopping/siblings.h"
#include "run/trial_script.h"
#include "study/loader.h"
#include "study/repeats.h"
#include "tests/test_util.h"

using namespace sweep;
using namespace sweep::run;

namespace {

std::string RepeatStudy(const std::string& search) {
  return "[study]\nname = \"t1\"\n\n[cluster]\ntransport = \"local\"\nworkdir = \"/tmp/x\"\n\n"
         "[job]\ntemplate = \"job.sbatch\"\n\n[search]\n" +
         search + "\n[space]\nlr = [0.1, 0.01]\n";
}

Result<study::Study> Load(testing::TempDir& dir, const std::string& tmpl, const std::string& text) {
  testing::WriteAll(dir.file("job.sbatch"), tmpl);
  auto s = study::ParseStudy(text, dir.file("study.toml"));
  if (!s.ok()) return s;
  if (Status st = CheckStudyTemplate(*s); !st.ok()) return st;
  return s;
}

std::vector<CurvePoint> Flat(double level) {
  std::vector<CurvePoint> out;
  for (int k = 1; k <= 20; ++k) out.push_back({k * 10, static_cast<double>(k), level});
  return out;
}

}  // namespace

TEST_CASE("repeats need a template that passes the seed on: else every repeat runs the same job", "[repeats][render]") {
  testing::TempDir dir;
  auto unused = Load(dir, "#!/bin/bash\ntrain --lr {{lr}}\n", RepeatStudy("repeats = 3\n"));
  REQUIRE_FALSE(unused.ok());
  CHECK_THAT(unused.status().message(), Catch::Contains("study.toml:12: key 'search.repeats'"));
  CHECK_THAT(unused.status().message(), Catch::Contains("{{seed}}, which"));
  auto named = Load(dir, "#!/bin/bash\ntrain --lr {{lr}}\n", RepeatStudy("seed_var = \"rng\"\n"));
  REQUIRE_FALSE(named.ok());
  CHECK_THAT(named.status().message(), Catch::Contains("key 'search.seed_var'"));
  CHECK_THAT(named.status().message(), Catch::Contains("{{rng}}"));
  auto used = Load(dir, "#!/bin/bash\ntrain --lr {{lr}} --seed {{seed}}\n", RepeatStudy("repeats = 3\n"));
  REQUIRE(used.ok());
  // The seed renders as any other value.
  auto specs = study::ExpandSpace(*used);
  REQUIRE(specs.ok());
  auto vars = TrialTemplateVars(*used, (*specs)[2], 1, "/log");
  CHECK(vars.at("seed") == "2");
  CHECK(RenderRefusals(*used, *specs).empty());
  // Without repeats, {{seed}} is an unknown placeholder, as before.
  CHECK_FALSE(Load(dir, "#!/bin/bash\ntrain --lr {{lr}} --seed {{seed}}\n", RepeatStudy("")).ok());
}

TEST_CASE("tpe sees a configuration's repeats as one point: its mean once every repeat has ended", "[repeats][tpe]") {
  using sampler::Outcome;
  auto obs = [](double x, Outcome o, double v) { return sampler::Observation{{x}, o, v, 0}; };
  std::vector<std::pair<std::string, sampler::Observation>> history = {
      {"a", obs(0.1, Outcome::kComplete, 1.0)}, {"a", obs(0.1, Outcome::kComplete, 3.0)},
      {"b", obs(0.2, Outcome::kComplete, 0.5)}, {"b", obs(0.2, Outcome::kPending, 0)},
      {"c", obs(0.3, Outcome::kInfeasible, 0)}, {"c", obs(0.3, Outcome::kIgnored, 0)},
      {"d", obs(0.4, Outcome::kPartial, 2.0)},  {"d", obs(0.4, Outcome::kComplete, 1.0)},
      {"e", obs(0.5, Outcome::kIgnored, 0)},
  };
  auto merged = MergeRepeats(history);
  REQUIRE(merged.size() == 5);
  CHECK(merged[0].outcome == Outcome::kComplete);
  CHECK(merged[0].value == 2.0);
  CHECK(merged[0].x == sampler::Point{0.1});
  CHECK(merged[1].outcome == Outcome::kPending);  // a sibling still runs: not told yet
  CHECK(merged[2].outcome == Outcome::kInfeasible);
  CHECK(merged[3].outcome == Outcome::kPartial);
  CHECK(merged[3].value == 1.5);
  CHECK(merged[4].outcome == Outcome::kIgnored);
  // Slots to configurations: at least one while a slot is free.
  CHECK(ConfigsForSlots(0, 3) == 0);
  CHECK(ConfigsForSlots(2, 3) == 1);
  CHECK(ConfigsForSlots(7, 3) == 2);
  CHECK(ConfigsForSlots(4, 1) == 4);
}

TEST_CASE("early stopping never stops a repeat because its sibling is better", "[repeats][stopping]") {
  StoppingConfig config;
  config.median.enabled = true;
  config.median.min_trials = 1;
  stopping::StoppingState state(config);
  // Configuration X ran twice: seed 0 is lucky (1.0), seed 1 not (2.0); configuration Y is worse than both.
  state.Append(1, 1, Flat(1.0), {});
  state.Append(2, 1, Flat(2.0), {});
  state.Append(3, 1, Flat(2.5), {});
  std::vector<stopping::TrialProgress> trials(3);
  for (int i = 0; i < 3; ++i) {
    trials[i].id = i + 1;
    trials[i].name = "t" + std::to_string(i + 1);
  }
  std::vector<std::string> config_of = {"X", "X", "Y"};
  // Without the grouping, the median of the others (1.0, 2.5) stops seed 1 of X for its sibling's sake.
  auto plain = state.Evaluate(trials);
  bool sibling_stopped =
      std::any_of(plain.begin(), plain.end(), [](const stopping::StopDecision& d) { return d.trial_id == 2; });
  REQUIRE(sibling_stopped);
  auto apart = stopping::EvaluateApartFromSiblings(state, trials, config_of);
  REQUIRE(apart.size() == 1);
  CHECK(apart[0].trial_id == 3);  // Y is behind both repeats of X
  // With no siblings at all, it is stopping::StoppingState::Evaluate.
  auto alone = stopping::EvaluateApartFromSiblings(state, trials, {"X", "Y", "Z"});
  CHECK(alone.size() == plain.size());
  // A genuine rival still counts: configuration Z at 1.2 puts the median of seed 1's others (1.2, 2.5)
  // at 1.85, and seed 1 goes; seed 0 stays.
  state.Append(4, 1, Flat(1.2), {});
  trials.push_back(trials.back());
  trials.back().id = 4;
  trials.back().name = "t4";
  auto rival = stopping::EvaluateApartFromSiblings(state, trials, {"X", "X", "Y", "Z"});
  std::vector<int64_t> stopped;
  for (const auto& d : rival) stopped.push_back(d.trial_id);
  CHECK(stopped == std::vector<int64_t>{2, 3});
  REQUIRE(!rival.empty());
  CHECK_THAT(rival[0].reason, Catch::Contains("median 1.85 of 2 trials"));
}
