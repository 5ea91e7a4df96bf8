// Tests of study loading, constraint expressions and space expansion: what a user sees when
// the study file is right, and the file:line:key they get when it is not.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <random>
#include <set>
#include <vector>

#include "study/expr.h"
#include "study/loader.h"
#include "study/space.h"
#include "tests/test_util.h"

using namespace sweep;
using namespace sweep::study;

namespace {

// A valid study in `dir`, with its template; `extra` is appended (later tables win nothing:
// TOML forbids redefinition, so tests pass whole sections).
std::string MinimalStudy(const std::string& space = "[space]\nlr = [0.1, 0.01]\nopt = [\"sgd\", \"adam\"]\n",
                         const std::string& search = "") {
  return "[study]\nname = \"t1\"\n\n[cluster]\ntransport = \"local\"\nworkdir = \"/tmp/x\"\n\n"
         "[job]\ntemplate = \"job.sbatch\"\n\n" +
         search + space;
}

struct StudyDir {
  testing::TempDir dir;
  StudyDir(const std::string& tmpl = "#!/bin/bash\ntrain --lr {{lr}} --opt {{opt}} --trial {{trial}}\n") {
    testing::WriteAll(dir.file("job.sbatch"), tmpl);
  }
  Result<Study> Parse(const std::string& text) { return ParseStudy(text, dir.file("study.toml")); }
};

}  // namespace

TEST_CASE("a valid study loads with defaults and resolved paths", "[study]") {
  StudyDir d;
  auto s = d.Parse(MinimalStudy());
  REQUIRE(s.ok());
  CHECK(s->name == "t1");
  CHECK(s->database == d.dir.file("t1.db"));
  CHECK(s->job.template_path == d.dir.file("job.sbatch"));
  CHECK(s->space.size() == 2);
  CHECK(s->sampler == "grid");
  CHECK(s->cluster.max_concurrent == 4);
}

TEST_CASE("TOML syntax errors name file and line", "[study]") {
  StudyDir d;
  auto s = d.Parse("[study]\nname = \"x\"\nbroken = = 3\n");
  REQUIRE_FALSE(s.ok());
  CHECK(s.status().code() == Status::Code::kInvalidArgument);
  CHECK_THAT(s.status().message(), Catch::Contains("study.toml:3"));
}

TEST_CASE("wrong types and unknown keys name file, line and key", "[study]") {
  StudyDir d;
  auto s = d.Parse(
      "[study]\nname = \"t1\"\n\n[cluster]\ntransport = \"local\"\nworkdir = \"/tmp/x\"\n"
      "max_concurrent = \"four\"\n\n[job]\ntemplate = \"job.sbatch\"\n[space]\nlr = [1]\nopt = [\"a\"]\n");
  REQUIRE_FALSE(s.ok());
  CHECK_THAT(s.status().message(), Catch::Contains("study.toml:7") && Catch::Contains("cluster.max_concurrent") &&
                                       Catch::Contains("integer"));

  auto typo = d.Parse(
      "[study]\nname = \"t1\"\n\n[cluster]\ntransport = \"local\"\nworkdir = \"/tmp/x\"\n"
      "max_concurent = 3\n[job]\ntemplate = \"job.sbatch\"\n[space]\nlr = [1]\nopt = [\"a\"]\n");
  REQUIRE_FALSE(typo.ok());
  CHECK_THAT(typo.status().message(), Catch::Contains("study.toml:7") && Catch::Contains("cluster.max_concurent") &&
                                          Catch::Contains("did you mean 'max_concurrent'"));
}

TEST_CASE("missing sections and bad values are reported", "[study]") {
  StudyDir d;
  auto no_cluster = d.Parse("[study]\nname = \"t1\"\n[job]\ntemplate = \"job.sbatch\"\n[space]\nlr = [1]\n");
  REQUIRE_FALSE(no_cluster.ok());
  CHECK_THAT(no_cluster.status().message(), Catch::Contains("[cluster]"));

  auto bad_name = d.Parse(MinimalStudy().replace(MinimalStudy().find("\"t1\""), 4, "\"a b; rm\""));
  REQUIRE_FALSE(bad_name.ok());
  CHECK_THAT(bad_name.status().message(), Catch::Contains("study.toml:2") && Catch::Contains("study.name"));

  auto empty_list = d.Parse(MinimalStudy("[space]\nlr = []\nopt = [\"a\"]\n"));
  REQUIRE_FALSE(empty_list.ok());
  CHECK_THAT(empty_list.status().message(), Catch::Contains("space.lr") && Catch::Contains("empty"));
}

TEST_CASE("likely mistakes that used to load silently are errors", "[study]") {
  StudyDir d;
  auto message = [&](const std::string& text) {
    auto s = d.Parse(text);
    REQUIRE_FALSE(s.ok());
    CHECK(s.status().code() == Status::Code::kInvalidArgument);
    return s.status().message();
  };
  // A list mixing numbers and strings: "32" and 32 would be two different trials.
  CHECK_THAT(message(MinimalStudy("[space]\nlr = [0.1]\nopt = [16, \"32\"]\n")),
             Catch::Contains("study.toml:") && Catch::Contains("space.opt") && Catch::Contains("mixes numbers"));
  CHECK(d.Parse(MinimalStudy("[space]\nlr = [1, 0.5]\nopt = [\"a\"]\n")).ok());  // ints and floats are numbers
  // A grid with a trial budget: the budget would be ignored.
  CHECK_THAT(
      message(MinimalStudy("[space]\nlr = [0.1]\nopt = [\"a\"]\n", "[search]\nsampler = \"grid\"\ntrials = 5\n")),
      Catch::Contains("study.toml:13: key 'search.trials'") && Catch::Contains("random sampler"));
  // A value given twice is one trial: the grid counted 16 trials for a study of 4 in `run` and listed each twice.
  CHECK_THAT(message(MinimalStudy("[space]\nlr = [0.01, 0.1, 1e-2]\nopt = [\"a\"]\n")),
             Catch::Contains("study.toml:12: key 'space.lr'") && Catch::Contains("0.01 is already in the list"));
  CHECK_THAT(message(MinimalStudy("[space]\nlr = [0.1]\nopt = [8, 8.0]\n")),
             Catch::Contains("space.opt") && Catch::Contains("8 is already"));
  CHECK_THAT(message(MinimalStudy("[space]\nlr = [0.1]\nopt = [\"a\", \"b\", \"a\"]\n")),
             Catch::Contains("space.opt") && Catch::Contains("a is already"));
  CHECK(d.Parse(MinimalStudy("[space]\nlr = [0.1]\nopt = [\"1\", \"01\"]\n")).ok());  // two strings
  // A constraint comparing a parameter with a value it never takes drops all or nothing: a warning (a
  // constraint shared by studies may name a value this space leaves out).
  auto warnings = [&](const std::string& constraint) {
    auto s = d.Parse(MinimalStudy("[space]\nlr = [0.1]\nopt = [\"sgd\", \"adam\"]\n",
                                  "[search]\nconstraints = ['" + constraint + "']\n"));
    REQUIRE(s.ok());
    return s->warnings;
  };
  auto typo = warnings("opt != \"adamw\" || lr < 1");
  REQUIRE(typo.size() == 1);
  CHECK_THAT(typo[0],
             Catch::Contains("study.toml:12: key 'search.constraints'") &&
                 Catch::Contains("compares 'opt' with \"adamw\", which is not one of its values (sgd, adam)") &&
                 Catch::Contains("did you mean 'adam'"));
  CHECK(warnings("\"Adam\" == opt").size() == 1);
  CHECK(warnings("opt != \"sgd\" || lr < 1").empty());
  // An empty objective matches no metric: run submitted trials and stopped only when the first one ended.
  CHECK_THAT(message(MinimalStudy() + "[objective]\nmetric = \"\"\n"),
             Catch::Contains("study.toml:15: key 'objective.metric'") && Catch::Contains("empty"));
  // An empty path would quietly mean the default under ~/.ssh.
  std::string empty_key = MinimalStudy();
  empty_key.replace(empty_key.find("workdir"), 0, "identity_file = \"\"\n");
  CHECK_THAT(message(empty_key),
             Catch::Contains("study.toml:6: key 'cluster.identity_file'") && Catch::Contains("empty"));
  // log and int of a range are booleans: "yes" sampled uniformly before.
  std::string random = "[search]\nsampler = \"random\"\ntrials = 4\n";
  CHECK_THAT(message(MinimalStudy("[space]\nlr = { min = 0.001, max = 0.1, log = \"yes\" }\nopt = [\"a\"]\n", random)),
             Catch::Contains("study.toml:") && Catch::Contains("space.lr.log") && Catch::Contains("true or false"));
  CHECK_THAT(message(MinimalStudy("[space]\nlr = { min = 1, max = 8, int = 1 }\nopt = [\"a\"]\n", random)),
             Catch::Contains("space.lr.int"));
  CHECK(d.Parse(MinimalStudy("[space]\nlr = { min = 0.001, max = 0.1, log = true }\nopt = [\"a\"]\n", random)).ok());
  // An unknown key with nothing close lists the known ones.
  CHECK_THAT(message(MinimalStudy() + "[retry]\noom = 1\n"),
             Catch::Contains("unknown key 'retry.oom' (known keys: failed, timeout, out_of_memory, cuda_oom"));
}

TEST_CASE("job.mem and job.time_limit are checked against Slurm's syntax when the file loads", "[study]") {
  StudyDir d;
  auto with_job = [&](const std::string& keys) {
    std::string text = MinimalStudy();
    text.replace(text.find("template = \"job.sbatch\"\n"), 24, "template = \"job.sbatch\"\n" + keys);
    return d.Parse(text);
  };
  for (const char* good :
       {"mem = \"100M\"", "mem = \"64G\"", "mem = \"4096\"", "time_limit = \"30\"", "time_limit = \"01:30:00\"",
        "time_limit = \"2-12\"", "time_limit = \"1-00:00:00\"", "time_limit = \"UNLIMITED\""}) {
    auto s = with_job(std::string(good) + "\n");
    INFO(good << ": " << s.status().ToString());
    CHECK(s.ok());
  }
  auto mem = with_job("mem = \"lots\"\n");
  REQUIRE_FALSE(mem.ok());
  CHECK(mem.status().message() ==
        d.dir.file("study.toml") +
            ":10: key 'job.mem': 'lots' is not a Slurm memory size: a number with an optional "
            "K, M, G or T suffix, e.g. \"100M\" or \"64G\"");
  auto time = with_job("time_limit = \"1h\"\n");
  REQUIRE_FALSE(time.ok());
  CHECK_THAT(time.status().message(), Catch::Contains(":10: key 'job.time_limit': '1h' is not a Slurm time"));
}

TEST_CASE("constraint expressions", "[study][expr]") {
  auto e = Expr::Parse("tp * pp <= gpus && (precision == \"fp8\" or not fast)");
  REQUIRE(e.ok());
  std::map<std::string, ExprValue> vars = {
      {"tp", 2.0}, {"pp", 4.0}, {"gpus", 8.0}, {"precision", std::string("bf16")}, {"fast", false}};
  CHECK(e->EvalBool(vars).value() == true);
  vars["tp"] = 4.0;
  CHECK(e->EvalBool(vars).value() == false);
  CHECK(Expr::Parse("a % 3 == 1 - -1").value().EvalBool({{"a", 5.0}}).value() == true);
  CHECK(e->Variables() == std::vector<std::string>{"tp", "pp", "gpus", "precision", "fast"});

  CHECK_FALSE(Expr::Parse("tp * ").ok());
  CHECK_FALSE(Expr::Parse("(tp").ok());
  CHECK_FALSE(Expr::Parse("tp <= 'x").ok());
  CHECK_THAT(Expr::Parse("tp $ 2").status().message(), Catch::Contains("character 4"));
  auto mixed = Expr::Parse("precision < 3").value().EvalBool({{"precision", std::string("fp8")}});
  REQUIRE_FALSE(mixed.ok());
  CHECK_THAT(mixed.status().message(), Catch::Contains("string") && Catch::Contains("number"));
  CHECK_FALSE(Expr::Parse("1 / 0 > 1").value().EvalBool({}).ok());
  CHECK_FALSE(Expr::Parse("tp + 1").value().EvalBool({{"tp", 1.0}}).ok());  // not a boolean
}

TEST_CASE("a constraint that does not parse or names no parameter is a study error", "[study]") {
  StudyDir d;
  auto bad = d.Parse(MinimalStudy("[space]\nlr = [0.1]\nopt = [\"a\"]\n", "[search]\nconstraints = [\"lr <\"]\n"));
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("study.toml:12") && Catch::Contains("search.constraints"));
  auto unknown =
      d.Parse(MinimalStudy("[space]\nlr = [0.1]\nopt = [\"a\"]\n", "[search]\nconstraints = [\"lrr < 1\"]\n"));
  REQUIRE_FALSE(unknown.ok());
  CHECK_THAT(unknown.status().message(), Catch::Contains("lrr"));
}

TEST_CASE("a constraint that cannot be evaluated names the file, line and key", "[space]") {
  StudyDir d;
  auto s = d.Parse(
      MinimalStudy("[space]\nlr = [0.1]\nopt = [\"sgd\", \"adam\"]\n", "[search]\nconstraints = [\"opt > 3\"]\n"));
  REQUIRE(s.ok());  // the types are known only when a trial's values are put in
  auto trials = ExpandSpace(*s);
  REQUIRE_FALSE(trials.ok());
  CHECK_THAT(trials.status().message(),
             Catch::Contains("study.toml:12: key 'search.constraints': constraint 'opt > 3'") &&
                 Catch::Contains("cannot apply '>'"));
}

TEST_CASE("grid expansion drops constrained configurations and keys are stable", "[space]") {
  StudyDir d;
  auto s = d.Parse(MinimalStudy("[space]\nlr = [0.1, 0.01]\nopt = [\"sgd\", \"adam\"]\n",
                                "[search]\nconstraints = [\"opt != 'sgd' || lr < 0.05\"]\n"));
  REQUIRE(s.ok());
  auto trials = ExpandSpace(*s);
  REQUIRE(trials.ok());
  REQUIRE(trials->size() == 4);
  int dropped = 0;
  for (const auto& t : *trials) {
    if (!t.dropped_reason.empty()) {
      ++dropped;
      CHECK(t.params_json == R"({"lr":0.1,"opt":"sgd"})");
      CHECK_THAT(t.dropped_reason, Catch::Contains("opt != 'sgd'"));
    }
  }
  CHECK(dropped == 1);
  // Same values in another order give the same key; another value gives another key.
  std::vector<std::pair<std::string, ParamValue>> a = {{"lr", 0.1}, {"opt", std::string("sgd")}};
  std::vector<std::pair<std::string, ParamValue>> b = {{"opt", std::string("sgd")}, {"lr", 0.1}};
  std::vector<std::pair<std::string, ParamValue>> c = {{"opt", std::string("sgd")}, {"lr", 0.2}};
  CHECK(TrialKey(a) == TrialKey(b));
  CHECK(TrialKey(a) != TrialKey(c));
  auto again = ExpandSpace(*s);
  CHECK((*again)[2].key == (*trials)[2].key);
}

TEST_CASE("the random sampler draws a reproducible budget of distinct trials", "[space]") {
  StudyDir d;
  auto s = d.Parse(MinimalStudy("[space]\nlr = { min = 1e-4, max = 1e-1, log = true }\nopt = [\"sgd\", \"adam\"]\n",
                                "[search]\nsampler = \"random\"\ntrials = 10\nseed = 3\n"));
  REQUIRE(s.ok());
  auto a = ExpandSpace(*s);
  auto b = ExpandSpace(*s);
  REQUIRE(a.ok());
  REQUIRE(a->size() == 10);
  std::set<std::string> keys;
  for (size_t i = 0; i < a->size(); ++i) {
    CHECK((*a)[i].key == (*b)[i].key);
    keys.insert((*a)[i].key);
    double lr = std::get<double>((*a)[i].params[0].second);
    CHECK(lr >= 1e-4);
    CHECK(lr <= 1e-1);
  }
  CHECK(keys.size() == 10);

  auto grid_range = d.Parse(MinimalStudy("[space]\nlr = { min = 1, max = 2 }\nopt = [\"a\"]\n"));
  REQUIRE_FALSE(grid_range.ok());
  CHECK_THAT(grid_range.status().message(), Catch::Contains("random sampler"));
}

TEST_CASE("hostile study input is an error, never a crash or a hang", "[study]") {
  StudyDir d;
  std::string deep(3000, '(');
  auto nested = d.Parse(
      MinimalStudy("[space]\nlr = [0.1]\nopt = [\"a\"]\n", "[search]\nconstraints = [\"" + deep + "lr < 1\"]\n"));
  REQUIRE_FALSE(nested.ok());
  CHECK_THAT(nested.status().message(), Catch::Contains("nested more than"));
  std::string chain = "lr";
  for (int i = 0; i < 5000; ++i) chain += " + lr";
  auto flat = d.Parse(
      MinimalStudy("[space]\nlr = [0.1]\nopt = [\"a\"]\n", "[search]\nconstraints = [\"" + chain + " > 0\"]\n"));
  REQUIRE_FALSE(flat.ok());

  std::string device = MinimalStudy();
  device.replace(device.find("job.sbatch"), 10, "/dev/zero");
  auto dev = d.Parse(device);
  REQUIRE_FALSE(dev.ok());
  CHECK_THAT(dev.status().message(), Catch::Contains("not a regular file"));

  std::string huge = "[space]\n";
  for (int i = 0; i < 10; ++i) huge += fmt::format("p{} = [1,2,3,4,5,6,7,8,9,10]\n", i);
  auto grid = d.Parse(MinimalStudy(huge + "lr = [1]\nopt = [\"a\"]\n"));
  REQUIRE_FALSE(grid.ok());
  CHECK_THAT(grid.status().message(), Catch::Contains("random sampler"));
}

TEST_CASE("job-array, queue and ranking keys load, and bad values name their key", "[study]") {
  StudyDir d;
  auto s = d.Parse(MinimalStudy());
  REQUIRE(s.ok());
  CHECK(s->cluster.arrays);
  CHECK(s->cluster.queue_ahead == -1);
  CHECK(s->cluster.max_array_size == 1000);
  CHECK(s->cluster.query_gap_s == 0.5);
  CHECK_FALSE(s->objective.rank_by_time_to_target);

  auto set = d.Parse(
      "[study]\nname = \"t1\"\n[objective]\nrank_by = \"time_to_target\"\n[cluster]\n"
      "transport = \"local\"\nworkdir = \"/tmp/x\"\narrays = false\nqueue_ahead = 0\n"
      "max_array_size = 200\nquery_gap_s = 0\n[job]\ntemplate = \"job.sbatch\"\n"
      "[space]\nlr = [1]\nopt = [\"a\"]\n");
  REQUIRE(set.ok());
  CHECK_FALSE(set->cluster.arrays);
  CHECK(set->cluster.queue_ahead == 0);
  CHECK(set->cluster.max_array_size == 200);
  CHECK(set->cluster.query_gap_s == 0);
  CHECK(set->objective.rank_by_time_to_target);

  auto bad = d.Parse(
      "[study]\nname = \"t1\"\n[objective]\nrank_by = \"speed\"\n[cluster]\ntransport = \"local\"\n"
      "workdir = \"/tmp/x\"\narrays = \"yes\"\n[job]\ntemplate = \"job.sbatch\"\n");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(bad.status().message(), Catch::Contains("study.toml:4") && Catch::Contains("objective.rank_by"));
  auto bad_array = d.Parse(
      "[study]\nname = \"t1\"\n[cluster]\ntransport = \"local\"\n"
      "workdir = \"/tmp/x\"\narrays = \"yes\"\n[job]\ntemplate = \"job.sbatch\"\n");
  REQUIRE_FALSE(bad_array.ok());
  CHECK_THAT(bad_array.status().message(),
             Catch::Contains("study.toml:6") && Catch::Contains("cluster.arrays") && Catch::Contains("true or false"));
}

TEST_CASE("an objective to maximise is judged by every stopping rule, negated", "[study][stopping]") {
  StudyDir d;
  auto s = d.Parse(
      "[study]\nname = \"t1\"\n[objective]\nmetric = \"accuracy\"\nmode = \"max\"\n[cluster]\ntransport = "
      "\"local\"\nworkdir = \"/tmp/x\"\n\n[job]\ntemplate = \"job.sbatch\"\n\n[space]\nlr = [0.1, 0.01]\nopt = "
      "[\"sgd\", \"adam\"]\n[stopping]\n[stopping.median]\n[stopping.throughput]\nparams = [\"opt\"]\n");
  REQUIRE(s.ok());
  CHECK_FALSE(s->objective.minimize);
  CHECK(s->stopping.maximize);
  CHECK(s->stopping.median.enabled);
  CHECK(s->stopping.throughput.enabled);
}

// The transports are a closed set: "ssh", "openssh", "local". Any other value, however close, is refused
// with file, line and key, and the openssh-only key is refused elsewhere.
TEST_CASE("cluster.transport: openssh loads with its keys; any other name is refused with file and line", "[study]") {
  StudyDir d;
  auto with = [&](const std::string& cluster) {
    return d.Parse("[study]\nname = \"t1\"\n\n[cluster]\n" + cluster +
                   "workdir = \"/tmp/x\"\n\n[job]\ntemplate = \"job.sbatch\"\n\n[space]\nlr = [0.1]\nopt = [\"a\"]\n");
  };
  auto s = with(
      "transport = \"openssh\"\nhost = \"login.example.org\"\nssh_config = \"site.conf\"\n"
      "require_master = true\nreauth_wait_s = 60\n");
  INFO(s.status().ToString());
  REQUIRE(s.ok());
  CHECK(s->cluster.transport == "openssh");
  CHECK(s->cluster.require_master);
  CHECK(s->cluster.reauth_wait_s == 60);
  CHECK(s->cluster.ssh_config == d.dir.file("site.conf"));
  CHECK(s->cluster.remote());
  CHECK(with("transport = \"ssh\"\nhost = \"h\"\n")->cluster.reauth_wait_s == 900);

  auto master_on_ssh = with("transport = \"ssh\"\nhost = \"h\"\nrequire_master = true\n");
  REQUIRE_FALSE(master_on_ssh.ok());
  CHECK_THAT(master_on_ssh.status().message(), Catch::Contains("study.toml:7") &&
                                                   Catch::Contains("cluster.require_master") &&
                                                   Catch::Contains("transport = \"openssh\""));
  auto no_host = with("transport = \"openssh\"\n");
  REQUIRE_FALSE(no_host.ok());
  CHECK_THAT(no_host.status().message(), Catch::Contains("cluster.host"));
  auto dash = with("transport = \"openssh\"\nhost = \"-oProxyCommand=x\"\n");
  REQUIRE_FALSE(dash.ok());
  CHECK_THAT(dash.status().message(), Catch::Contains("study.toml:6") && Catch::Contains("cluster.host"));
  auto negative = with("transport = \"openssh\"\nhost = \"h\"\nreauth_wait_s = -1\n");
  REQUIRE_FALSE(negative.ok());
  CHECK_THAT(negative.status().message(), Catch::Contains("cluster.reauth_wait_s"));

  // Property: random names (mutations of the real ones among them) are refused unless they are one of the three.
  std::mt19937 rng(39);
  const std::string alphabet = "sshopenlcaSHOP-_ 2";
  for (int i = 0; i < 300; ++i) {
    std::string name = std::vector<std::string>{"ssh", "openssh", "local"}[rng() % 3];
    int edits = 1 + static_cast<int>(rng() % 3);
    for (int e = 0; e < edits; ++e) {
      size_t at = rng() % (name.size() + 1);
      if (rng() % 2 && at < name.size()) name.erase(at, 1);
      else name.insert(at, 1, alphabet[rng() % alphabet.size()]);
    }
    auto r = with("transport = \"" + name + "\"\nhost = \"h\"\n");
    bool known = name == "ssh" || name == "openssh" || name == "local";
    INFO(name);
    CHECK(r.ok() == known);
    if (!known)
      CHECK_THAT(r.status().message(), Catch::Contains("study.toml:5") && Catch::Contains("cluster.transport"));
  }
}
