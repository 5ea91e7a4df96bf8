// sampler = "tpe" in the run loop, against the fake Slurm (tests/fake_slurm.h): proposals go as
// one job array per free-slot batch, more follow as trials end, constraints and the memory plan
// are respected, and a run resumed from its database proposes what an uninterrupted one does.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "orchestrator/runner.h"
#include "planner/planner.h"
#include "store/store.h"
#include "study/study.h"
#include "tests/fake_slurm.h"
#include "tests/fake_sweep.h"
#include "tests/test_util.h"

using namespace sweep;
using testing::FakeClock;
using testing::FakeSlurm;
using testing::MegatronLine;

namespace {

const char* kTpeStudy = R"([search]
sampler = "tpe"
trials = 14
seed = 3
constraints = ["x + y <= 1.2"]

[space]
x = { min = 0.0, max = 1.0 }
y = { min = 0.0, max = 1.0 }
opt = ["sgd", "adam"]
)";

// The TPE study of these tests (name "tp") on the fake Slurm; `job` goes before `tables`.
class TpeSweep : public testing::FakeSweep {
 public:
  explicit TpeSweep(const std::string& tables, int max_concurrent = 4, const std::string& job = "")
      : FakeSweep(job + "\n" + tables, max_concurrent, "", "echo {{x}} {{y}} {{opt}}", "tp") {}

  // Runs and ends the first `n` trials waiting in the queue; loss from their values.
  void EndSome(int n) {
    for (const auto& t : Trials()) {
      if (n == 0) break;
      if (t.state != "pending") continue;
      auto p = nlohmann::json::parse(t.params_json);
      double loss = std::pow(p["x"].get<double>() - 0.3, 2) + std::pow(p["y"].get<double>() - 0.6, 2) +
                    (p["opt"] == "adam" ? 0 : 0.5);
      slurm.Start(t.job_id);
      slurm.AppendLog(t.job_id, MegatronLine(10, 10, loss));
      slurm.End(t.job_id, "COMPLETED");
      --n;
    }
  }
};

// Drives a sweep to its end, two trials ending per tick; `restart_every` > 0 starts a new
// orchestrator on the same database every that many ticks. Returns the trials' keys in order.
std::vector<std::string> Drive(TpeSweep& s, int restart_every) {
  for (int tick = 1; tick < 100; ++tick) {
    if (restart_every > 0 && tick % restart_every == 0) s.Restart();
    if (s.Tick().done) break;
    s.EndSome(2);
  }
  std::vector<std::string> keys;
  for (const auto& t : s.Trials()) keys.push_back(t.trial_key);
  return keys;
}

}  // namespace

TEST_CASE("tpe: a batch of K = free slots goes as one job array; more are proposed as trials end",
          "[runner][sampler]") {
  TpeSweep s(kTpeStudy, 4);
  TickReport first = s.Tick();
  CHECK(first.submitted == 4);
  REQUIRE(s.slurm.issued("sbatch").size() == 1);
  auto script = s.slurm.file("/fake/work/scripts/ss-tp-arr1-1.sbatch");
  REQUIRE(script);
  CHECK_THAT(*script, Catch::Contains("#SBATCH --array=0-3%4"));

  // Two end: two slots are free, and the next tick fills them with two new proposals, one array.
  s.EndSome(2);
  TickReport second = s.Tick();
  CHECK(second.ended == 2);
  CHECK(second.submitted == 2);
  CHECK(s.slurm.issued("sbatch").size() == 2);
  CHECK(s.Trials().size() == 6);

  auto keys = Drive(s, 0);
  CHECK(keys.size() == 14);  // the budget, no more
  for (const auto& t : s.Trials()) {
    CHECK(t.state == "completed");
    auto p = nlohmann::json::parse(t.params_json);
    CHECK(p["x"].get<double>() + p["y"].get<double>() <= 1.2);  // never a configuration the constraint drops
  }
  // It learns: the later half is closer to the optimum (0.3, 0.6, adam) than the random start.
  auto distance = [](const store::TrialRecord& t) {
    auto p = nlohmann::json::parse(t.params_json);
    return std::hypot(p["x"].get<double>() - 0.3, p["y"].get<double>() - 0.6) + (p["opt"] == "adam" ? 0 : 1);
  };
  auto trials = s.Trials();
  double early = 0, late = 0;
  for (int i = 0; i < 4; ++i) early += distance(trials[i]);
  for (int i = 10; i < 14; ++i) late += distance(trials[i]);
  CHECK(late < early);
}

TEST_CASE("tpe: a run resumed from its database proposes what an uninterrupted one does", "[runner][sampler]") {
  TpeSweep straight(kTpeStudy, 4), resumed(kTpeStudy, 4);
  auto a = Drive(straight, 0);
  auto b = Drive(resumed, 2);  // a new orchestrator every second tick
  REQUIRE(a.size() == 14);
  CHECK(a == b);
  // And another seed proposes otherwise.
  std::string other = kTpeStudy;
  other.replace(other.find("seed = 3"), 8, "seed = 4");
  TpeSweep reseeded(other, 4);
  CHECK(Drive(reseeded, 0) != a);
}

TEST_CASE("tpe: the study loader names bad keys of a tpe study", "[sampler]") {
  testing::TempDir dir;
  testing::WriteAll(dir.file("job.sbatch"), "#!/bin/bash\necho {{x}}\n");
  auto load = [&](const std::string& search) {
    return ParseStudy(
        "[study]\nname = \"b\"\n[cluster]\ntransport = \"local\"\nworkdir = \"/w\"\n[job]\ntemplate = "
        "\"job.sbatch\"\n" +
            search + "\n[space]\nx = { min = 0.0, max = 1.0 }\n",
        dir.file("study.toml"));
  };
  auto no_budget = load("[search]\nsampler = \"tpe\"");
  REQUIRE_FALSE(no_budget.ok());
  CHECK_THAT(no_budget.status().message(), Catch::Contains("study.toml:8: key 'search.trials'") &&
                                               Catch::Contains("the tpe sampler needs a trial budget"));
  auto typo = load("[search]\nsampler = \"tpee\"\ntrials = 5");
  REQUIRE_FALSE(typo.ok());
  CHECK_THAT(typo.status().message(), Catch::Contains("key 'search.sampler': must be \"grid\", \"random\" or \"tpe\""));
  auto top = load("[search]\nsampler = \"tpe\"\ntrials = 5\nseed_from = { study = \"old.toml\", top = 3 }");
  REQUIRE_FALSE(top.ok());
  CHECK_THAT(top.status().message(),
             Catch::Contains("key 'search.seed_from.top'") && Catch::Contains("every ended trial of the other study"));
  auto warm = load("[search]\nsampler = \"tpe\"\ntrials = 5\nseed_from = { study = \"old.toml\" }");
  REQUIRE(warm.ok());
  REQUIRE(warm->warm_start);
  CHECK(warm->warm_start->study_path == dir.file("old.toml"));
  CHECK_FALSE(warm->seed_from);
}

TEST_CASE("tpe: proposals never break a parallelism rule or the memory plan", "[runner][sampler]") {
  // Llama 3.1 70B on 4 nodes of 8 x 80 GB: most layouts run out of memory or break a rule.
  const char* study = R"([search]
sampler = "tpe"
trials = 12
seed = 1

[space]
x = [1]
y = [2]
opt = ["a"]
tp = [1, 2, 4, 8]
pp = [1, 2, 4, 8, 16]
mbs = [1, 2, 4, 8]
)";
  TpeSweep s(study, 4,
             "nodes = 4\ngpus_per_node = 8\n[job.vars]\nmodel = \"llama3.1-70b\"\ngpu_mem_gib = 80\n"
             "global_batch_size = 128\n");
  for (int tick = 0; tick < 30; ++tick) {
    if (s.Tick().done) break;
    s.EndSome(4);
  }
  auto trials = s.Trials();
  INFO(s.log());
  REQUIRE(!trials.empty());
  std::vector<TrialSpec> specs;
  for (const auto& t : trials) {
    TrialSpec spec;
    spec.key = t.trial_key;
    auto p = nlohmann::json::parse(t.params_json);
    for (const char* k : {"mbs", "opt", "pp", "tp", "x", "y"}) {
      if (p[k].is_string()) spec.params.emplace_back(k, p[k].get<std::string>());
      else spec.params.emplace_back(k, p[k].get<int64_t>());
    }
    specs.push_back(spec);
  }
  auto plan = PlanTrials(s.study(), specs);
  REQUIRE(plan.ok());
  for (const auto& row : plan->rows) {
    INFO(row.trial.key << " " << row.reason);
    CHECK(row.verdict == PlanRow::Verdict::kFits);
  }
  // Every layout that fits was proposed, then the study ended short of its budget.
  std::vector<TrialSpec> all;
  for (int64_t tp : {1, 2, 4, 8}) {
    for (int64_t pp : {1, 2, 4, 8, 16}) {
      for (int64_t mbs : {1, 2, 4, 8}) {
        TrialSpec spec;
        spec.params = {{"x", int64_t{1}}, {"y", int64_t{2}}, {"opt", std::string("a")},
                       {"tp", tp},        {"pp", pp},        {"mbs", mbs}};
        all.push_back(spec);
      }
    }
  }
  auto full = PlanTrials(s.study(), all);
  REQUIRE(full.ok());
  CHECK(static_cast<size_t>(full->Count(PlanRow::Verdict::kFits)) == trials.size());
  CHECK(trials.size() < 12);
}
