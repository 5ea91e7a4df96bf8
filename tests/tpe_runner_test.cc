// sampler = "tpe" in the run loop, against the fake Slurm (tests/fake_slurm.h): proposals go as
// one job array per free-slot batch, more follow as trials end, constraints and the memory plan
// are respected, and a run resumed from its database proposes what an uninterrupted one does.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cmath>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "results/phases.h"
#include "results/report_data.h"
#include "run/runner.h"
#include "run/tpe_trials.h"
#include "planner/planner.h"
#include "reports/html_report.h"
#include "reports/html_text.h"
#include "store/store.h"
#include "study/loader.h"
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
  run::TickReport first = s.Tick();
  CHECK(first.submitted == 4);
  REQUIRE(s.slurm.issued("sbatch").size() == 1);
  auto script = s.slurm.file("/fake/work/scripts/tp/ss-tp-arr1-1.sbatch");
  REQUIRE(script);
  CHECK_THAT(*script, Catch::Contains("#SBATCH --array=0-3%4"));

  // Two end: two slots are free, and the next tick fills them with two new proposals, one array.
  s.EndSome(2);
  run::TickReport second = s.Tick();
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

TEST_CASE(
    "tpe: a warm start (seed_from) proposes towards the other study's best from its first batch; resumed, "
    "the same",
    "[runner][sampler]") {
  // The prior: the same space run to its end (the hardware changed since, say).
  TpeSweep prior(kTpeStudy, 4);
  REQUIRE(Drive(prior, 0).size() == 14);
  store::TrialRecord best;
  double best_loss = INFINITY;
  for (const auto& t : prior.Trials()) {
    double loss = prior.Loss(t).back();
    if (loss < best_loss) best = t, best_loss = loss;
  }
  auto best_params = nlohmann::json::parse(best.params_json);
  auto distance = [&](const store::TrialRecord& t) {
    auto p = nlohmann::json::parse(t.params_json);
    return std::hypot(p["x"].get<double>() - best_params["x"].get<double>(),
                      p["y"].get<double>() - best_params["y"].get<double>()) +
           (p["opt"] == best_params["opt"] ? 0 : 1);
  };
  std::string warm_study = kTpeStudy;
  warm_study.insert(warm_study.find("seed = 3\n") + 9,
                    "seed_from = { study = \"" + prior.file("study.toml") + "\" }\n");

  // The first batch, before this study has any result: a cold start draws it at random, a warm
  // start from the prior's model, close to the prior's best.
  TpeSweep cold(kTpeStudy, 4), warm(warm_study, 4);
  REQUIRE(cold.Tick().submitted == 4);
  REQUIRE(warm.Tick().submitted == 4);
  CHECK(warm.Events("warm_start") == 1);
  double cold_distance = 0, warm_distance = 0;
  std::string batches;
  for (const auto& t : cold.Trials()) cold_distance += distance(t), batches += " cold " + t.params_json;
  for (const auto& t : warm.Trials()) warm_distance += distance(t), batches += " warm " + t.params_json;
  INFO(batches << "; the prior's best " << best.params_json);
  CHECK(warm_distance < cold_distance / 2);
  // The first pick, before the constant liar spreads the batch: the prior's best optimizer, near its values.
  CHECK(distance(warm.Trials().front()) < 0.3);

  // Resumed every other tick, the warm-started study proposes what an uninterrupted one does.
  TpeSweep straight(warm_study, 4), resumed(warm_study, 4);
  auto a = Drive(straight, 0);
  REQUIRE(a.size() == 14);
  CHECK(Drive(resumed, 2) == a);
  TpeSweep cold_again(kTpeStudy, 4);
  CHECK(Drive(cold_again, 0) != a);
}

TEST_CASE("tpe: the study loader names bad keys of a tpe study", "[sampler]") {
  testing::TempDir dir;
  testing::WriteAll(dir.file("job.sbatch"), "#!/bin/bash\necho {{x}}\n");
  auto load = [&](const std::string& search) {
    return study::ParseStudy(
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
  auto plan = results::PlanTrials(s.study(), specs);
  REQUIRE(plan.ok());
  for (const auto& row : plan->rows) {
    INFO(row.trial.key << " " << row.reason);
    CHECK(row.verdict == planner::PlanRow::Verdict::kFits);
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
  auto full = results::PlanTrials(s.study(), all);
  REQUIRE(full.ok());
  CHECK(static_cast<size_t>(full->Count(planner::PlanRow::Verdict::kFits)) == trials.size());
  CHECK(trials.size() < 12);
}

namespace {

// A tpe study of Llama 3.1 8B micro-batch sizes and a learning rate, on 400 GiB GPUs with no
// headroom; a larger micro-batch trains better, so the sampler is drawn to the memory limit.
const char* kMemoryStudy = R"(nodes = 1
gpus_per_node = 8
[job.vars]
model = "llama3.1-8b"
gpu_mem_gib = 400
headroom_gib = 0
global_batch_size = 64
seq_length = 4096
[search]
sampler = "tpe"
trials = 12
seed = 1
[space]
mbs = [1, 2, 4, 8]
lr = { min = 1e-5, max = 1e-3, log = true }
)";

int64_t Mbs(const store::TrialRecord& t) { return nlohmann::json::parse(t.params_json)["mbs"].get<int64_t>(); }

// Ends every queued trial: completed, its loss better with a larger micro-batch; the first trial
// to end also reports a memory peak of `first_peak_mb` (Megatron's memory line).
void EndQueued(testing::FakeSweep& s, std::optional<double>& first_peak_mb) {
  for (const auto& t : s.Trials()) {
    if (t.state != "pending") continue;
    double lr = nlohmann::json::parse(t.params_json)["lr"].get<double>();
    double loss = 3.0 - 0.1 * static_cast<double>(Mbs(t)) + std::fabs(std::log10(lr) + 4);
    std::string log = MegatronLine(10, 20, loss);
    if (first_peak_mb) {
      log += fmt::format(
          "[Rank 0] (after 10 iterations) memory (MB) | allocated: 1000.0 | max allocated: 2000.0 | "
          "reserved: 3000.0 | max reserved: {:.1f}\n",
          *std::exchange(first_peak_mb, std::nullopt));
    }
    s.slurm.Start(t.job_id);
    s.slurm.AppendLog(t.job_id, log);
    s.slurm.End(t.job_id, "COMPLETED");
  }
}

}  // namespace

TEST_CASE("tpe: a measured peak above the plan's recalibrates memory for every later proposal, resumed or not",
          "[runner][sampler]") {
  auto drive = [](int restart_every) {
    auto s = std::make_unique<testing::FakeSweep>(kMemoryStudy, 2, "", "echo {{mbs}} {{lr}}", "tm");
    std::vector<TrialSpec> layouts;
    for (int64_t mbs : {1, 2, 4, 8}) layouts.push_back({"", {{"mbs", mbs}}, "", ""});
    auto plan = results::PlanTrials(s->study(), layouts);
    REQUIRE(plan.ok());
    std::map<int64_t, double> peak;  // mbs -> predicted peak bytes
    for (const auto& row : plan->rows) {
      REQUIRE(row.verdict == planner::PlanRow::Verdict::kFits);
      peak[std::get<int64_t>(row.trial.params[0].second)] = row.memory->Peak().Total();
    }
    s->Tick();
    auto first = s->Trials();
    REQUIRE(first.size() == 2);
    // The first trial peaks `extra` above its prediction: enough that mbs 4 and 8 no longer fit
    // in 400 GiB, not so much that mbs 2 does not.
    REQUIRE(Mbs(first[0]) <= 2);
    const double gib = 1024.0 * 1024 * 1024;
    double extra = 400 * gib - (peak[2] + peak[4]) / 2;
    std::optional<double> first_peak_mb = (peak[Mbs(first[0])] + extra) / (1024.0 * 1024);
    for (int tick = 1; tick < 40; ++tick) {
      if (restart_every > 0 && tick % restart_every == 0) s->Restart();
      EndQueued(*s, first_peak_mb);
      if (s->Tick().done) break;
    }
    return s;
  };
  auto straight = drive(0);
  auto trials = straight->Trials();
  INFO(straight->log());
  REQUIRE(trials.size() == 12);
  CHECK(straight->Events("calibrate") == 1);
  // The first batch went before anything was measured; every later proposal fits the calibrated plan.
  for (size_t i = 2; i < trials.size(); ++i) {
    INFO(trials[i].params_json);
    CHECK(Mbs(trials[i]) <= 2);
  }
  // A run restarted every other tick reads the calibration back from the store and proposes the same.
  auto resumed = drive(2);
  auto again = resumed->Trials();
  REQUIRE(again.size() == trials.size());
  for (size_t i = 0; i < trials.size(); ++i) CHECK(again[i].trial_key == trials[i].trial_key);
}

TEST_CASE("tpe: the report draws each trial's predicted GPU memory beside the measured one",
          "[runner][sampler][report]") {
  // [job] monitor = true with a model: the report's memory chart has the planner's line. A tpe
  // study's proposals are in no expansion of its space: the report plans the stored trials.
  testing::FakeSweep s(std::string("monitor = true\n") + kMemoryStudy, 2, "", "echo {{mbs}} {{lr}}", "tr");
  s.Tick();
  std::optional<double> no_peak;
  EndQueued(s, no_peak);
  s.Tick();
  auto trials = s.Trials();
  REQUIRE(trials.size() == 4);
  for (const auto& t : trials) {
    // What nvidia-smi would have measured (telemetry is keyed by Unix seconds).
    std::vector<store::MetricRow> rows = {{1000, 1000, "system/gpu0/mem_used_gib", 20},
                                          {1010, 1010, "system/gpu0/mem_used_gib", 30}};
    REQUIRE(s.db().AppendTelemetry(t.id, rows, 100).ok());
  }
  auto report = results::CollectReport(s.db(), s.study(), s.runner().study_id(), results::ReportOptionsFor(s.study()),
                                       s.clock.Now());
  REQUIRE(report.ok());
  REQUIRE(report->trials.size() == trials.size());
  std::string html = reports::RenderHtmlReport(*report);
  const double gib = 1024.0 * 1024 * 1024;
  for (size_t i = 0; i < trials.size(); ++i) {
    INFO(trials[i].params_json);
    auto plan = results::PlanTrials(s.study(), {{"", {{"mbs", Mbs(trials[i])}}, "", ""}});
    REQUIRE(plan.ok());
    REQUIRE(plan->rows[0].memory);
    double predicted = plan->rows[0].memory->Peak().Total() / gib;
    REQUIRE(report->trials[i].predicted_gpu_mem_gib);
    CHECK(*report->trials[i].predicted_gpu_mem_gib == Approx(predicted));
    CHECK_THAT(html, Catch::Contains(fmt::format("prediction {} GiB", reports::FormatSig(predicted, 3))));
  }
}

TEST_CASE("tpe: no proposal is dominated by an observed CUDA OOM, whatever its learning rate", "[runner][sampler]") {
  testing::FakeSweep s(R"([search]
sampler = "tpe"
trials = 16
seed = 5
[space]
mbs = [1, 2, 4, 8]
tp = [1, 2]
lr = { min = 1e-5, max = 1e-3, log = true }
)",
                       2, "", "echo {{mbs}} {{tp}} {{lr}}", "to");
  auto value = [](const store::TrialRecord& t, const char* k) {
    return nlohmann::json::parse(t.params_json)[k].get<double>();
  };
  // The cluster's truth: a micro-batch of 4 per tensor-parallel rank runs out of memory; the
  // larger the micro-batch that fits, the better the loss.
  std::vector<store::TrialRecord> ooms;  // observed so far
  size_t checked = 0;
  for (int tick = 0; tick < 40; ++tick) {
    bool done = s.Tick().done;
    auto trials = s.Trials();
    // An OOM is recorded before the same tick proposes: every trial proposed at this tick came
    // after it.
    for (const auto& t : trials) {
      if (t.state == "cuda_oom" &&
          std::none_of(ooms.begin(), ooms.end(), [&](const auto& o) { return o.id == t.id; })) {
        ooms.push_back(t);
      }
    }
    for (; checked < trials.size(); ++checked) {
      for (const auto& o : ooms) {
        INFO(trials[checked].params_json << " after the OOM of " << o.params_json);
        bool dominated =
            value(trials[checked], "mbs") >= value(o, "mbs") && value(trials[checked], "tp") <= value(o, "tp");
        CHECK_FALSE(dominated);
      }
    }
    if (done) break;
    for (const auto& t : trials) {
      if (t.state != "pending" || !t.stop_request.empty()) continue;
      s.slurm.Start(t.job_id);
      if (value(t, "mbs") / value(t, "tp") >= 4) {
        s.slurm.AppendLog(t.job_id, "torch.OutOfMemoryError: CUDA out of memory.\n");
        s.slurm.End(t.job_id, "FAILED");
      } else {
        s.slurm.AppendLog(t.job_id, MegatronLine(10, 20, 3.0 - 0.1 * value(t, "mbs")));
        s.slurm.End(t.job_id, "COMPLETED");
      }
    }
  }
  INFO(s.log());
  CHECK_FALSE(ooms.empty());
  CHECK(s.Trials().size() == 16);
}

TEST_CASE("tpe: what each end state teaches the sampler follows the table of trial states", "[sampler]") {
  using sampler::Outcome;
  CHECK(run::OutcomeOf("completed") == Outcome::kComplete);
  CHECK(run::OutcomeOf(std::string(kTrialPruned)) == Outcome::kPartial);
  // The settings' fault: the same configuration would end so again, or was ruled out.
  for (const char* s : {"failed", "timeout", "out_of_memory", "cuda_oom", "diverged", "skipped", "dropped"}) {
    INFO(s);
    CHECK(run::OutcomeOf(s) == Outcome::kInfeasible);
  }
  // The cluster's fault or the user's: nothing about the configuration.
  for (const char* s : {"cancelled", "node_fail", "preempted", "lost"}) {
    INFO(s);
    CHECK(run::OutcomeOf(s) == Outcome::kIgnored);
  }
  for (const char* s : {"new", "submitting", "pending", "running", "a-newer-version's-state"}) {
    INFO(s);
    CHECK(run::OutcomeOf(s) == Outcome::kPending);
  }
}

TEST_CASE("tpe with repeats: an enqueued configuration first, each proposal runs with seeds 0 and 1",
          "[runner][sampler][repeats][enqueue]") {
  testing::FakeSweep s(R"([search]
sampler = "tpe"
trials = 4
seed = 3
repeats = 2

[[search.enqueue]]
x = 0.5
y = 0.25
opt = "sgd"

[space]
x = { min = 0.0, max = 1.0 }
y = { min = 0.0, max = 1.0 }
opt = ["sgd", "adam"]
)",
                       4, "", "echo {{x}} {{y}} {{opt}} --seed {{seed}}", "tr");
  // Four free slots: two configurations of two trials each, the enqueued one first.
  run::TickReport first = s.Tick();
  CHECK(first.submitted == 4);
  auto trials = s.Trials();
  REQUIRE(trials.size() == 4);
  CHECK(trials[0].params_json == R"({"opt":"sgd","seed":0,"x":0.5,"y":0.25})");
  CHECK(trials[1].params_json == R"({"opt":"sgd","seed":1,"x":0.5,"y":0.25})");
  for (int tick = 0; tick < 50 && !s.Tick().done; ++tick) {
    for (const auto& t : s.Trials()) {
      if (t.state != "pending") continue;
      auto p = nlohmann::json::parse(t.params_json);
      s.slurm.Start(t.job_id);
      s.slurm.AppendLog(t.job_id, MegatronLine(10, 10, p["x"].get<double>() + 0.01 * p["seed"].get<double>()));
      s.slurm.End(t.job_id, "COMPLETED");
    }
  }
  // The budget counts configurations: 4 of them, each with seeds 0 and 1, and no configuration twice.
  trials = s.Trials();
  REQUIRE(trials.size() == 8);
  std::map<std::string, std::set<int>> seeds;
  for (const auto& t : trials) {
    CHECK(t.state == "completed");
    auto p = nlohmann::json::parse(t.params_json);
    int seed = p["seed"].get<int>();
    p.erase("seed");
    seeds[p.dump()].insert(seed);
  }
  REQUIRE(seeds.size() == 4);
  for (const auto& [config, got] : seeds) CHECK(got == std::set<int>{0, 1});
}
