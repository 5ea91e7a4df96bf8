// Tests of [search] repeats, seed_var and enqueue: the trials a study expands to (N per
// configuration, seeds 0 .. N-1, enqueued configurations first) and the file:line:key errors.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <map>
#include <set>

#include "study/loader.h"
#include "study/repeats.h"
#include "study/space.h"
#include "tests/test_util.h"

using namespace sweep;
using namespace sweep::study;

namespace {

std::string StudyText(const std::string& search,
                      const std::string& space = "lr = [0.1, 0.01]\nopt = [\"sgd\", \"adam\"]\n",
                      const std::string& vars = "") {
  return "[study]\nname = \"t1\"\n\n[cluster]\ntransport = \"local\"\nworkdir = \"/tmp/x\"\n\n"
         "[job]\ntemplate = \"job.sbatch\"\n" +
         vars + "\n[search]\n" + search + "\n[space]\n" + space;
}

struct StudyDir {
  testing::TempDir dir;
  StudyDir() { testing::WriteAll(dir.file("job.sbatch"), "#!/bin/bash\ntrain --lr {{lr}} --seed {{seed}}\n"); }
  Result<sweep::study::Study> Parse(const std::string& text) { return ParseStudy(text, dir.file("study.toml")); }
};

std::string Value(const TrialSpec& t, const std::string& name) {
  for (const auto& [n, v] : t.params) {
    if (n == name) return ParamToString(v);
  }
  return "";
}

}  // namespace

TEST_CASE("repeats = 3 makes each grid configuration three trials with seeds 0, 1, 2", "[study][repeats]") {
  StudyDir d;
  auto s = d.Parse(StudyText("repeats = 3\n"));
  REQUIRE(s.ok());
  CHECK(s->seed_var == "seed");
  auto trials = ExpandSpace(*s);
  REQUIRE(trials.ok());
  REQUIRE(trials->size() == 12);
  std::map<std::string, std::set<std::string>> seeds;  // configuration -> seeds
  std::set<std::string> keys;
  for (const TrialSpec& t : *trials) {
    seeds[ConfigIdentity(*s, t.params_json)].insert(Value(t, "seed"));
    keys.insert(t.key);
    CHECK(SeedOf(*s, t.params_json) == std::stoll(Value(t, "seed")));
  }
  CHECK(keys.size() == 12);
  REQUIRE(seeds.size() == 4);
  for (const auto& [config, s] : seeds) CHECK(s == std::set<std::string>{"0", "1", "2"});
  // Seed 0 keeps the key the configuration has without repeats: raising repeats keeps what ran.
  auto plain = d.Parse(StudyText(""));
  REQUIRE(plain.ok());
  auto once = ExpandSpace(*plain);
  REQUIRE(once.ok());
  std::set<std::string> seed0;
  for (const TrialSpec& t : *trials) {
    if (Value(t, "seed") == "0") seed0.insert(t.key);
  }
  std::set<std::string> plain_keys;
  for (const TrialSpec& t : *once) plain_keys.insert(t.key);
  CHECK(seed0 == plain_keys);
  // A rerun expands to the same trials.
  auto again = ExpandSpace(*s);
  REQUIRE(again.ok());
  for (size_t i = 0; i < trials->size(); ++i) CHECK((*again)[i].key == (*trials)[i].key);
}

TEST_CASE("repeats of a random study: the budget counts configurations, each run N times", "[study][repeats]") {
  StudyDir d;
  auto s = d.Parse(StudyText("sampler = \"random\"\ntrials = 3\nrepeats = 2\nseed_var = \"rng\"\n",
                             "lr = { min = 0.001, max = 0.1, log = true }\n"));
  REQUIRE(s.ok());
  CHECK(s->seed_var == "rng");
  auto trials = ExpandSpace(*s);
  REQUIRE(trials.ok());
  REQUIRE(trials->size() == 6);
  std::set<std::string> configs;
  for (const TrialSpec& t : *trials) configs.insert(ConfigIdentity(*s, t.params_json));
  CHECK(configs.size() == 3);
  CHECK(Value((*trials)[0], "rng") == "0");
  CHECK(Value((*trials)[1], "rng") == "1");
  CHECK(Value((*trials)[0], "lr") == Value((*trials)[1], "lr"));
}

TEST_CASE("a configuration that a constraint drops is one dropped row, not N", "[study][repeats]") {
  StudyDir d;
  auto s = d.Parse(StudyText("repeats = 2\nconstraints = [\"lr < 0.05\"]\n"));
  REQUIRE(s.ok());
  auto trials = ExpandSpace(*s);
  REQUIRE(trials.ok());
  int dropped = 0, run = 0;
  for (const TrialSpec& t : *trials) (t.dropped_reason.empty() ? run : dropped)++;
  CHECK(dropped == 2);
  CHECK(run == 4);
}

TEST_CASE("the seed's name may not be a parameter's, a [job.vars] variable's or a built-in's", "[study][repeats]") {
  StudyDir d;
  auto param = d.Parse(StudyText("repeats = 2\n", "lr = [0.1]\nseed = [1, 2]\n"));
  REQUIRE_FALSE(param.ok());
  CHECK_THAT(param.status().message(), Catch::Contains("study.toml:12: key 'search.repeats'"));
  CHECK_THAT(param.status().message(), Catch::Contains("[space] parameter (line 16)"));
  CHECK_THAT(param.status().message(), Catch::Contains("seed_var = \"rng\""));
  auto var = d.Parse(StudyText("repeats = 2\nseed_var = \"rng\"\n", "lr = [0.1]\n", "[job.vars]\nrng = \"x\"\n"));
  REQUIRE_FALSE(var.ok());
  CHECK_THAT(var.status().message(), Catch::Contains("key 'search.seed_var'"));
  CHECK_THAT(var.status().message(), Catch::Contains("[job.vars]"));
  auto builtin = d.Parse(StudyText("repeats = 2\nseed_var = \"trial\"\n", "lr = [0.1]\n"));
  REQUIRE_FALSE(builtin.ok());
  CHECK_THAT(builtin.status().message(), Catch::Contains("built-in"));
  auto bad = d.Parse(StudyText("repeats = 0\n", "lr = [0.1]\n"));
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("study.toml:12: key 'search.repeats': must be between 1"));
  // A parameter named seed is fine while the study has no repeats.
  CHECK(d.Parse(StudyText("", "lr = [0.1]\nseed = [1, 2]\n")).ok());
}

TEST_CASE("enqueued configurations run first, then the grid's others, each once", "[study][enqueue]") {
  StudyDir d;
  auto s =
      d.Parse(StudyText("repeats = 2\n[[search.enqueue]]\nlr = 0.01\nopt = \"adam\"\n"
                        "[[search.enqueue]]\nlr = 0.1\nopt = \"adam\"\n"));
  REQUIRE(s.ok());
  REQUIRE(s->enqueue.size() == 2);
  auto trials = ExpandSpace(*s);
  REQUIRE(trials.ok());
  REQUIRE(trials->size() == 8);  // the grid's 4 configurations, enqueued or not, twice each
  CHECK(Value((*trials)[0], "lr") == "0.01");
  CHECK(Value((*trials)[0], "opt") == "adam");
  CHECK(Value((*trials)[1], "lr") == "0.01");
  CHECK(Value((*trials)[1], "seed") == "1");
  CHECK(Value((*trials)[2], "lr") == "0.1");
  CHECK(Value((*trials)[2], "opt") == "adam");
  CHECK(Value((*trials)[4], "lr") == "0.1");
  CHECK(Value((*trials)[4], "opt") == "sgd");
  std::set<std::string> keys;
  for (const TrialSpec& t : *trials) keys.insert(t.key);
  CHECK(keys.size() == 8);
}

TEST_CASE("a random study's enqueued configurations count in its budget", "[study][enqueue]") {
  StudyDir d;
  auto s = d.Parse(StudyText("sampler = \"random\"\ntrials = 3\n[[search.enqueue]]\nlr = 0.02\nbatch = 8\n",
                             "lr = { min = 0.001, max = 0.1 }\nbatch = { min = 4, max = 64, int = true }\n"));
  REQUIRE(s.ok());
  auto trials = ExpandSpace(*s);
  REQUIRE(trials.ok());
  REQUIRE(trials->size() == 3);
  CHECK((*trials)[0].params_json == "{\"batch\":8,\"lr\":0.02}");
}

TEST_CASE("an enqueued configuration outside the space or dropped by a constraint is refused at load",
          "[study][enqueue]") {
  StudyDir d;
  auto not_listed = d.Parse(StudyText("[[search.enqueue]]\nlr = 0.5\nopt = \"adam\"\n"));
  REQUIRE_FALSE(not_listed.ok());
  CHECK_THAT(
      not_listed.status().message(),
      Catch::Contains("study.toml:13: key 'search.enqueue.lr': 0.5 is not one of space.lr's values (0.1, 0.01)"));
  auto typo = d.Parse(StudyText("[[search.enqueue]]\nlr = 0.1\nopt = \"adma\"\n"));
  REQUIRE_FALSE(typo.ok());
  CHECK_THAT(typo.status().message(), Catch::Contains("study.toml:14: key 'search.enqueue.opt'"));
  CHECK_THAT(typo.status().message(), Catch::Contains("(did you mean 'adam'?)"));
  auto missing = d.Parse(StudyText("[[search.enqueue]]\nlr = 0.1\n"));
  REQUIRE_FALSE(missing.ok());
  CHECK_THAT(missing.status().message(), Catch::Contains("study.toml:12: key 'search.enqueue': missing key 'opt'"));
  auto unknown = d.Parse(StudyText("[[search.enqueue]]\nlr = 0.1\nopt = \"sgd\"\nmomentum = 0.9\n"));
  REQUIRE_FALSE(unknown.ok());
  CHECK_THAT(unknown.status().message(), Catch::Contains("study.toml:15: unknown key 'search.enqueue.momentum'"));
  auto dropped = d.Parse(StudyText("constraints = [\"lr < 0.05\"]\n[[search.enqueue]]\nlr = 0.1\nopt = \"sgd\"\n"));
  REQUIRE_FALSE(dropped.ok());
  CHECK_THAT(dropped.status().message(), Catch::Contains("study.toml:13: key 'search.enqueue'"));
  CHECK_THAT(dropped.status().message(), Catch::Contains("constraint 'lr < 0.05' is false"));
  auto twice =
      d.Parse(StudyText("[[search.enqueue]]\nlr = 0.1\nopt = \"sgd\"\n[[search.enqueue]]\nlr = 0.1\nopt = \"sgd\"\n"));
  REQUIRE_FALSE(twice.ok());
  CHECK_THAT(twice.status().message(), Catch::Contains("the same configuration as line 12"));
  auto range = d.Parse(
      StudyText("sampler = \"tpe\"\ntrials = 4\n[[search.enqueue]]\nlr = 2.0\n", "lr = { min = 0.001, max = 0.1 }\n"));
  REQUIRE_FALSE(range.ok());
  CHECK_THAT(range.status().message(), Catch::Contains("key 'search.enqueue.lr': 2 is outside space.lr's range"));
  auto integer = d.Parse(StudyText("sampler = \"tpe\"\ntrials = 4\n[[search.enqueue]]\nbatch = 8.5\n",
                                   "batch = { min = 4, max = 64, int = true }\n"));
  REQUIRE_FALSE(integer.ok());
  CHECK_THAT(integer.status().message(), Catch::Contains("is an integer range: 8.5 is not an integer"));
}
