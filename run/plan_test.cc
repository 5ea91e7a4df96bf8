// `slurmsweep plan` of study files (the 70B example), the megatron-gpt template rendering the
// planned knobs, and the run loop dropping what the plan rules out: the application's use of the
// planner (planner/planner_test.cc tests the model itself).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "base/clock.h"
#include "results/phases.h"
#include "run/runner.h"
#include "run/trial_script.h"
#include "planner/planner.h"
#include "slurm/sbatch_script.h"
#include "slurm/transport.h"
#include "store/store.h"
#include "study/loader.h"
#include "tests/test_util.h"

using namespace sweep;
using namespace sweep::run;

namespace {
constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
}  // namespace

TEST_CASE("plan of the 70B study: every configuration with its memory or what drops it", "[planner]") {
  // Loading also renders templates/megatron-gpt.sbatch with every name: no unknown placeholder.
  auto study = study::LoadStudy(std::string(SLURMSWEEP_SOURCE_DIR) + "/examples/llama3-70b-h200.toml");
  REQUIRE(study.ok());
  auto plan = results::PlanStudy(*study);
  REQUIRE(plan.ok());
  CHECK(plan->world == 64);
  CHECK(plan->rows.size() == 4 * 3 * 4 * 2 * 3 * 2);
  using V = planner::PlanRow::Verdict;
  CHECK(plan->Count(V::kConstraint) + plan->Count(V::kRule) + plan->Count(V::kOom) + plan->Count(V::kFits) ==
        int(plan->rows.size()));
  auto find = [&](int mbs, int tp, int pp, const std::string& precision, const std::string& recompute,
                  const std::string& optimizer) -> const planner::PlanRow& {
    std::vector<std::pair<std::string, ParamValue>> want = {{"mbs", int64_t(mbs)},    {"tp", int64_t(tp)},
                                                            {"pp", int64_t(pp)},      {"precision", precision},
                                                            {"recompute", recompute}, {"optimizer", optimizer}};
    for (const auto& r : plan->rows)
      if (r.trial.key == study::TrialKey(want)) return r;
    FAIL("no such configuration");
    return plan->rows.front();
  };
  // The hand check: TP8 PP4 DP2, distributed optimizer: about 25 GiB of model states.
  const auto& hand = find(1, 8, 4, "bf16", "none", "adam");
  REQUIRE(hand.memory);
  CHECK(hand.verdict == V::kFits);
  CHECK(hand.memory->Peak().model_state_bytes / kGiB == Approx(25.4).epsilon(0.01));
  // MBS 8 with DP 32 needs a global batch of at least 256.
  const auto& rule = find(8, 2, 1, "bf16", "none", "adam");
  CHECK(rule.verdict == V::kRule);
  CHECK(rule.reason == "global batch (128) not divisible by MBS*DP (8*32=256)");
  // TP2 without PP holds 35B parameters per GPU: weights+grads+optimizer alone exceed 140 GiB.
  const auto& oom = find(1, 2, 1, "bf16", "full", "adam");
  CHECK(oom.verdict == V::kOom);
  CHECK(oom.reason.starts_with("predicted "));
  CHECK(oom.reason.ends_with(" GiB > 140 GiB"));
  // fp8 costs memory (cached fp8 weight copies); SGD saves some.
  CHECK(find(1, 8, 4, "fp8", "none", "adam").predicted_bytes > hand.predicted_bytes);
  CHECK(find(1, 8, 4, "bf16", "none", "sgd").predicted_bytes < hand.predicted_bytes);
  std::string text = planner::RenderPlan(*plan, {"mbs", "tp", "pp", "precision", "recompute", "optimizer"});
  CHECK(text.find(planner::PlanSummary(*plan)) != std::string::npos);
  CHECK(planner::PlanSummary(*plan).starts_with(
      "576 configs: 0 dropped by constraints, 12 dropped by parallelism rules, "));
}

TEST_CASE("plan says which study value it is missing", "[planner]") {
  testing::TempDir dir;
  testing::WriteAll(dir.file("job.sbatch"), "#!/bin/bash\necho {{tp}}\n");
  std::string base =
      "[study]\nname = \"p\"\n[cluster]\ntransport = \"local\"\nworkdir = \"/tmp/x\"\n"
      "[job]\ntemplate = \"job.sbatch\"\nnodes = 1\ngpus_per_node = 8\n";
  auto no_model = study::ParseStudy(base + "[space]\ntp = [1, 2]\n", dir.file("s.toml"));
  REQUIRE(no_model.ok());
  auto p = results::PlanStudy(*no_model);
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().message().find("[job.vars] model") != std::string::npos);
  auto unknown = study::ParseStudy(base + "[job.vars]\nmodel = \"gpt5\"\n[space]\ntp = [1, 2]\n", dir.file("s.toml"));
  REQUIRE(unknown.ok());
  CHECK(results::PlanStudy(*unknown).status().message().find("\"gpt5\" is not a preset") != std::string::npos);
  auto no_mem = study::ParseStudy(
      base + "[job.vars]\nmodel = \"llama3.1-8b\"\nglobal_batch_size = 8\n[space]\ntp = [1, 2]\n", dir.file("s.toml"));
  REQUIRE(no_mem.ok());
  CHECK(results::PlanStudy(*no_mem).status().message().find("gpu_mem_gib") != std::string::npos);
  auto ok = study::ParseStudy(
      base + "[job.vars]\nmodel = \"llama3.1-8b\"\nglobal_batch_size = 8\ngpu_mem_gib = 140\n[space]\ntp = [1, 2, 3]\n",
      dir.file("s.toml"));
  REQUIRE(ok.ok());
  auto plan = results::PlanStudy(*ok);
  REQUIRE(plan.ok());
  CHECK(planner::PlanSummary(*plan) ==
        "3 configs: 0 dropped by constraints, 1 dropped by parallelism rules, 0 predicted OOM "
        "(> 140 GiB incl. 4 GiB headroom), 2 fit");
}

namespace {

// Renders templates/megatron-gpt.sbatch for one configuration of the 70B study and runs it with
// stand-ins for scontrol and srun on PATH; returns the command line srun was given.
std::string LaunchLine(const std::map<std::string, std::string>& params) {
  auto study = study::LoadStudy(std::string(SLURMSWEEP_SOURCE_DIR) + "/examples/llama3-70b-h200.toml");
  REQUIRE(study.ok());
  testing::TempDir dir;
  std::map<std::string, std::string> vars = study->job.vars;
  for (const auto& [k, v] : params) vars[k] = v;
  vars["study"] = study->name;
  vars["trial"] = "t-000000000000";
  vars["attempt"] = "1";
  vars["workdir"] = dir.file("work");
  vars["trial_dir"] = dir.file("trial");
  vars["log"] = dir.file("log");
  vars["nodes"] = "8";
  vars["gpus_per_node"] = "8";
  vars["gpus"] = "64";
  vars["cpus_per_task"] = "96";
  auto script = slurm::RenderTemplate(study->job.template_text, study->job.template_path, vars, run::Declared(*study));
  REQUIRE(script.ok());
  testing::WriteAll(dir.file("job.sh"), *script);
  std::filesystem::create_directories(dir.file("bin"));
  testing::WriteAll(dir.file("bin/scontrol"), "#!/bin/sh\nprintf 'gpu-a01\\ngpu-a02\\n'\n");
  testing::WriteAll(dir.file("bin/srun"),
                    "#!/bin/sh\necho \"MASTER=$MASTER_ADDR:$MASTER_PORT $*\" > \"$(dirname \"$0\")/../launch\"\n");
  std::filesystem::permissions(dir.file("bin/scontrol"), std::filesystem::perms::owner_all);
  std::filesystem::permissions(dir.file("bin/srun"), std::filesystem::perms::owner_all);
  std::string cmd =
      fmt::format("PATH='{}':\"$PATH\" SLURM_JOB_NODELIST='gpu-a[01-02]' SLURM_JOB_ID=42 bash '{}' >/dev/null",
                  dir.file("bin"), dir.file("job.sh"));
  REQUIRE(std::system(cmd.c_str()) == 0);
  return testing::ReadAll(dir.file("launch"));
}

}  // namespace

TEST_CASE("the megatron-gpt template maps the planned knobs to Megatron's flags", "[planner]") {
  std::string line = LaunchLine(
      {{"mbs", "2"}, {"tp", "8"}, {"pp", "4"}, {"precision", "fp8"}, {"recompute", "full"}, {"optimizer", "sgd"}});
  INFO(line);
  CHECK(line.starts_with("MASTER=gpu-a01:29500 --nodes=8 --ntasks-per-node=1"));
  CHECK(line.find("torchrun --nnodes=8 --nproc-per-node=8 --rdzv-id=42 --rdzv-backend=c10d "
                  "--rdzv-endpoint=gpu-a01:29500 /opt/Megatron-LM/pretrain_gpt.py") != std::string::npos);
  for (const char* flag :
       {"--num-layers 80 --hidden-size 8192 --ffn-hidden-size 28672 --num-attention-heads 64", "--num-query-groups 8",
        "--swiglu", "--seq-length 8192", "--micro-batch-size 2", "--global-batch-size 128",
        "--tensor-model-parallel-size 8", "--pipeline-model-parallel-size 4", "--optimizer sgd", "--log-throughput",
        "--log-interval 1", "--train-iters 50", "--bf16", "--sequence-parallel", "--use-distributed-optimizer",
        "--fp8-format hybrid", "--recompute-granularity full --recompute-method uniform --recompute-num-layers 1",
        "--mock-data"})
    CHECK(line.find(flag) != std::string::npos);
  std::string plain = LaunchLine({{"mbs", "1"},
                                  {"tp", "1"},
                                  {"pp", "8"},
                                  {"precision", "bf16"},
                                  {"recompute", "selective"},
                                  {"optimizer", "adam"}});
  INFO(plain);
  CHECK(plain.find("--recompute-granularity selective") != std::string::npos);
  CHECK(plain.find("--recompute-method") == std::string::npos);
  CHECK(plain.find("--sequence-parallel") == std::string::npos);  // TP = 1
  CHECK(plain.find("--fp8-format") == std::string::npos);
  CHECK(plain.find("--optimizer adam") != std::string::npos);
  CHECK(plain.find("--context-parallel-size 1") != std::string::npos);
  CHECK(plain.find("--save") == std::string::npos);  // screening runs write no checkpoint
  std::string saving = LaunchLine({{"mbs", "1"},
                                   {"tp", "1"},
                                   {"pp", "8"},
                                   {"precision", "bf16"},
                                   {"recompute", "none"},
                                   {"optimizer", "adam"},
                                   {"save_checkpoints", "true"}});
  CHECK(saving.find("--save-interval 1000") != std::string::npos);
  CHECK(plain.find("--num-layers-per-virtual-pipeline-stage") == std::string::npos);  // VP = 1
  // Context and interleaved pipeline parallelism, which the planner models, reach Megatron too:
  // 80 layers over PP 4 x VP 5 = 4 layers per virtual stage.
  std::string cpvp = LaunchLine({{"mbs", "1"},
                                 {"tp", "2"},
                                 {"pp", "4"},
                                 {"cp", "2"},
                                 {"vp", "5"},
                                 {"precision", "bf16"},
                                 {"recompute", "none"},
                                 {"optimizer", "adam"}});
  INFO(cpvp);
  CHECK(cpvp.find("--context-parallel-size 2") != std::string::npos);
  CHECK(cpvp.find("--num-layers-per-virtual-pipeline-stage 4") != std::string::npos);
}

TEST_CASE("run drops what the plan rules out before anything is queued, saying why", "[planner]") {
  auto study = study::LoadStudy(std::string(SLURMSWEEP_SOURCE_DIR) + "/examples/llama3-70b-h200.toml");
  REQUIRE(study.ok());
  testing::TempDir dir;
  // Prepare only records trials and makes the work directory: the local transport and a temp
  // directory stand in for the H200 cluster, and nothing is submitted.
  study->cluster.transport = "local";
  study->cluster.workdir = dir.file("work");
  auto db = store::Store::Open(dir.file("plan.db"));
  REQUIRE(db.ok());
  auto transport = slurm::NewLocalTransport();
  SystemClock clock;
  std::ostringstream log;
  Runner runner(*study, **db, *transport, clock, log);
  REQUIRE(runner.Prepare().ok());
  auto trials = (*db)->ListTrials(runner.study_id());
  REQUIRE(trials.ok());
  auto plan = results::PlanStudy(*study);
  REQUIRE(plan.ok());
  int oom = 0, rule = 0, fresh = 0;
  for (const auto& t : *trials) {
    if (t.reason.rfind("memory plan: ", 0) == 0) {
      ++oom;
      CHECK(t.state == "dropped");
      CHECK_THAT(t.reason, Catch::Contains("GiB"));
    } else if (t.reason.rfind("parallelism rule: ", 0) == 0) {
      ++rule;
      CHECK(t.state == "dropped");
    } else if (t.state == "new") {
      ++fresh;
    }
  }
  CHECK(oom == plan->Count(planner::PlanRow::Verdict::kOom));
  CHECK(rule == plan->Count(planner::PlanRow::Verdict::kRule));
  CHECK(fresh == plan->Count(planner::PlanRow::Verdict::kFits));
  CHECK(oom > 0);
  CHECK(rule > 0);
}
