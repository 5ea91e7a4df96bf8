// Tests of the memory planner and model FLOPs: hand-checkable cases, the planner against the
// memory Megatron-LM measured in recorded runs (tests/data/megatron_cases.csv), and `plan`.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "base/clock.h"
#include "planner/planner.h"
#include "orchestrator/phases.h"
#include "orchestrator/runner.h"
#include "slurm/transport.h"
#include "store/store.h"
#include "slurm/sbatch_script.h"
#include "tests/test_util.h"

using namespace sweep;

namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

TrainingConfig Llama70BConfig(int tp, int pp, int mbs, const std::string& recompute = "none") {
  TrainingConfig c;
  c.par.world = 64;
  c.par.tp = tp;
  c.par.pp = pp;
  c.par.mbs = mbs;
  c.par.gbs = 128;
  c.par.sequence_parallel = tp > 1;
  c.par.recompute = recompute;
  if (recompute == "full") {
    c.par.recompute_method = "uniform";
    c.par.recompute_layers = 1;
  }
  return c;
}

// The 12-layer GPT of Megatron-LM's small functional tests (see tests/data/MEGATRON_SOURCE.md).
ModelPreset SmallGpt() {
  ModelPreset m = *FindModelPreset("gpt3-7b");
  m.name = "gpt3-12l-512h";
  m.layers = 12;
  m.hidden = 512;
  m.heads = 8;
  m.kv_groups = 8;
  m.ffn_hidden = 2048;
  m.vocab = 50257;
  m.seq_length = 1024;
  m.tied_embeddings = true;
  return m;
}

}  // namespace

TEST_CASE("bytes per parameter follow Megatron's accounting", "[planner]") {
  CHECK(BytesPerParam("adam", false, 8) == 18);
  CHECK(BytesPerParam("adam", true, 2) == 12);   // 6 + 12/2
  CHECK(BytesPerParam("adam", true, 8) == 7.5);  // 6 + 12/8
  CHECK(BytesPerParam("sgd", false, 8) == 14);
  CHECK(BytesPerParam("sgd", true, 2) == 10);  // 6 + 8/2
}

TEST_CASE("70B TP8 PP4 DP2 with the distributed optimizer: about 25 GiB of model states", "[planner]") {
  auto m = *FindModelPreset("llama3-70b");
  CHECK(ModelParams(m) / 1e9 == Approx(70.55).epsilon(0.01));
  auto e = EstimateMemory(Llama70BConfig(8, 4, 1), m);
  // By hand: a layer has (8192*(8192+2*1024) + 8192^2 + 3*8192*28672)/8 = 106.95M GEMM weights
  // per TP rank; 20 layers + an eighth of the 128256x8192 embedding = 2.27B parameters; at
  // 6 + 12/2 = 12 bytes that is 27.2 GB = 25.4 GiB.
  CHECK(e.first.params / 1e9 == Approx(2.27).epsilon(0.01));
  CHECK(e.first.model_state_bytes / kGiB == Approx(25.4).epsilon(0.01));
  CHECK(e.first.microbatches_in_flight == 4);
  CHECK(e.last.microbatches_in_flight == 1);
  // Interleaved, VP 5: the first rank runs (4-1)*2 + 4*4 + 1 = 23 chunks of 4 layers ahead,
  // 4.6 stages' worth (Korthikanti et al.'s 4 * (1 + 3/20)); the last rank 17 chunks, 3.4.
  auto interleaved = Llama70BConfig(8, 4, 1);
  interleaved.par.vp = 5;
  auto iv = EstimateMemory(interleaved, m);
  CHECK(iv.first.microbatches_in_flight == Approx(4.6));
  CHECK(iv.last.microbatches_in_flight == Approx(3.4));
}

TEST_CASE("activations follow Korthikanti et al. 2022", "[planner]") {
  // GPT-like shape (FFN 4h, no GQA, no SwiGLU): the paper's 34sbh + 5as^2b per layer.
  ModelPreset m = SmallGpt();
  m.vocab = 50304;
  TrainingConfig c;
  c.par.world = 8;
  c.par.mbs = 2;
  c.par.gbs = 16;
  c.flash_attention = false;
  double s = 1024, b = 2, h = 512, a = 8;
  CHECK(LayerActivationBytes(c, m) == Approx(s * b * h * 34 + 5 * a * s * s * b));
  c.par.tp = 4;  // without sequence parallelism: sbh(10 + 24/t + 5as/(ht))
  CHECK(LayerActivationBytes(c, m) == Approx(s * b * h * (10 + 24.0 / 4 + 5 * a * s / (h * 4))));
  c.par.sequence_parallel = true;  // with: sbh/t (34 + 5as/h)
  CHECK(LayerActivationBytes(c, m) == Approx(s * b * h / 4 * (34 + 5 * a * s / h)));
  c.par.recompute = "selective";  // the score matrices are recomputed: 34sbh/t
  CHECK(LayerActivationBytes(c, m) == Approx(s * b * h * 34 / 4));
  c.par.recompute = "none";
  c.flash_attention = true;  // flash attention never stores them either
  CHECK(LayerActivationBytes(c, m) == Approx(s * b * h * 34 / 4));
}

TEST_CASE("recompute, micro-batch size and fp8 move memory the right way", "[planner]") {
  auto m = *FindModelPreset("llama3-70b");
  auto none = EstimateMemory(Llama70BConfig(8, 4, 1), m);
  auto full = EstimateMemory(Llama70BConfig(8, 4, 1, "full"), m);
  auto selective = EstimateMemory(Llama70BConfig(8, 4, 1, "selective"), m);
  auto mbs2 = EstimateMemory(Llama70BConfig(8, 4, 2), m);
  CHECK(full.first.activation_bytes < none.first.activation_bytes / 5);
  CHECK(selective.first.activation_bytes == Approx(none.first.activation_bytes));
  CHECK(mbs2.first.activation_bytes == Approx(2 * none.first.activation_bytes));
  // Per layer, 70B, s=8192, b=1, TP8 with SP: (2*8192*(8192+2048) + 2*8192*8192 + 6*8192*28672
  // + 10*8192*8192) bytes / 8 = 285 MiB; 20 layers x 4 microbatches in flight = 22.3 GiB.
  CHECK(none.first.activation_bytes / kGiB == Approx(22.3 + 0).epsilon(0.02));
  auto fp8 = Llama70BConfig(8, 4, 1);
  fp8.precision = "fp8";
  auto e = EstimateMemory(fp8, m);
  CHECK(e.first.fp8_bytes / kGiB == Approx(20 * 106.95e6 * 2 / kGiB).epsilon(0.01));
  auto sgd = Llama70BConfig(8, 4, 1);
  sgd.optimizer = "sgd";
  CHECK(EstimateMemory(sgd, m).first.model_state_bytes < none.first.model_state_bytes);
}

TEST_CASE("model FLOPs per token follow Megatron's formula", "[planner]") {
  auto m = *FindModelPreset("llama3-70b");
  // 12 * 80 * 8192^2 * ((1 + 8/64 + 8192/8192) + 28672/8192 * 1.5 + 128256/(2*80*8192)) = 481.4e9
  CHECK(ModelFlopsPerToken(m) == Approx(12.0 * 80 * 8192 * 8192 * (2.125 + 5.25 + 128256.0 / (2 * 80 * 8192))));
  // Sanity: 6 FLOPs per parameter plus the attention scores (12 * L * h * s: 14% more at s = h).
  CHECK(ModelFlopsPerToken(m) / (6 * ModelParams(m)) == Approx(1.137).epsilon(0.01));
  // 64 GPUs at 50,000 tokens/s: 50e3 * 481.4e9 / 64 = 376 TFLOP/s per GPU, 38.0% of the
  // dense bf16 peak of an H100/H200 (989 TFLOP/s).
  CHECK(ModelFlopsPerToken(m) / 1e9 == Approx(481.4).epsilon(0.001));
  CHECK(Mfu(50e3, 64, m, 989) == Approx(0.380).epsilon(0.005));
  CHECK(Mfu(50e3, 64, m, 0) == 0);
}

// mem_allocated_bytes is `allocated_bytes.all.current` after the step on the last rank: the
// model states of the last pipeline stage, without activations; mem_max_allocated_bytes is the
// peak, with them (7B cases only, see tests/data/MEGATRON_SOURCE.md). Observed (planner / measured):
//   gpt3-7b TP1 PP4 VP8 DP2 dist-opt: model states 21.75 / 23.11 GiB -5.8%; peak 53.85 / 56.36 GiB -4.5%
//   gpt3-7b TP4 PP1 DP2 dist-opt:     model states 19.14 / 19.24 GiB -0.6%; peak 51.64 / 53.22 GiB -3.0%
//   Bound for the 7B cases: 10% either way, on both.
//   12-layer 512-hidden (64M params) cases: 0.09-0.14 GiB under, a fixed allocation (cuBLAS and
//   TE workspaces) that the headroom covers: bounded by 0.15 GiB absolute, not relative.
// Left out: a case with two distributed-optimizer instances (--num-distributed-optimizer-instances
// shards over DP/2, which cases.csv does not record: predicted 0.27, measured 0.46 GiB).
TEST_CASE("planner matches Megatron-LM's measured allocated memory", "[planner]") {
  std::stringstream in(testing::TestData("megatron_cases.csv"));
  std::string line;
  std::getline(in, line);  // provenance comment
  std::getline(in, line);
  auto header = testing::SplitCsvLine(line);
  auto col = [&](const std::string& name) {
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return i;
    FAIL("no column " << name);
    return size_t(0);
  };
  int checked = 0;
  double worst_7b = 0, worst_small_gib = 0, worst_peak = 0;
  while (std::getline(in, line)) {
    auto r = testing::SplitCsvLine(line);
    REQUIRE(r.size() == header.size());
    std::string name = r[col("case")];
    bool big = name.starts_with("gpt3_7b");
    ModelPreset m = big ? *FindModelPreset("gpt3-7b") : SmallGpt();
    REQUIRE(std::stoi(r[col("num_layers")]) == m.layers);
    REQUIRE(std::stoi(r[col("hidden_size")]) == m.hidden);
    REQUIRE(std::stoi(r[col("seq_length")]) == m.seq_length);
    TrainingConfig c;
    c.par.world = std::stoi(r[col("num_gpus")]);
    c.par.tp = std::stoi(r[col("tp")]);
    c.par.pp = std::stoi(r[col("pp")]);
    c.par.mbs = std::stoi(r[col("micro_batch_size")]);
    c.par.gbs = std::stoi(r[col("global_batch_size")]);
    c.par.vp = r[col("vp")].empty() ? 1 : std::stoi(r[col("vp")]);
    c.par.sequence_parallel = r[col("sequence_parallel")] == "true";
    c.optimizer = r[col("optimizer")];
    c.distributed_optimizer = r[col("use_distributed_optimizer")] == "true";
    auto e = EstimateMemory(c, m);
    double predicted = e.last.model_state_bytes, measured = std::stod(r[col("mem_allocated_bytes")]);
    INFO(fmt::format("{}: predicted {:.3f} GiB, measured {:.3f} GiB", name, predicted / kGiB, measured / kGiB));
    if (big) {
      double rel = (predicted - measured) / measured;
      worst_7b = std::max(worst_7b, std::abs(rel));
      CHECK(std::abs(rel) < 0.10);
      // The peak: model states + activations of the microbatches in flight + logits.
      double peak_measured = std::stod(r[col("mem_max_allocated_bytes")]);
      double peak_rel = (e.last.Total() - peak_measured) / peak_measured;
      INFO(fmt::format("peak: predicted {:.2f} GiB, measured {:.2f} GiB", e.last.Total() / kGiB, peak_measured / kGiB));
      worst_peak = std::max(worst_peak, std::abs(peak_rel));
      CHECK(std::abs(peak_rel) < 0.10);
    } else {
      double diff = (measured - predicted) / kGiB;
      worst_small_gib = std::max(worst_small_gib, std::abs(diff));
      CHECK(diff >= 0);  // never more than measured: the gap is a fixed allocation
      CHECK(diff < 0.15);
    }
    ++checked;
  }
  CHECK(checked == 9);
  WARN(
      fmt::format("planner vs measured: 7B model states worst {:.1f}%, 7B peak worst {:.1f}%, "
                  "12-layer worst {:.3f} GiB",
                  worst_7b * 100, worst_peak * 100, worst_small_gib));
}

TEST_CASE("plan of the 70B study: every configuration with its memory or what drops it", "[planner]") {
  // Loading also renders templates/megatron-gpt.sbatch with every name: no unknown placeholder.
  auto study = LoadStudy(std::string(SLURMSWEEP_SOURCE_DIR) + "/examples/llama3-70b-h200.toml");
  REQUIRE(study.ok());
  auto plan = PlanStudy(*study);
  REQUIRE(plan.ok());
  CHECK(plan->world == 64);
  CHECK(plan->rows.size() == 4 * 3 * 4 * 2 * 3 * 2);
  using V = PlanRow::Verdict;
  CHECK(plan->Count(V::kConstraint) + plan->Count(V::kRule) + plan->Count(V::kOom) + plan->Count(V::kFits) ==
        int(plan->rows.size()));
  auto find = [&](int mbs, int tp, int pp, const std::string& precision, const std::string& recompute,
                  const std::string& optimizer) -> const PlanRow& {
    std::vector<std::pair<std::string, ParamValue>> want = {{"mbs", int64_t(mbs)},    {"tp", int64_t(tp)},
                                                            {"pp", int64_t(pp)},      {"precision", precision},
                                                            {"recompute", recompute}, {"optimizer", optimizer}};
    for (const auto& r : plan->rows)
      if (r.trial.key == TrialKey(want)) return r;
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
  std::string text = RenderPlan(*plan, {"mbs", "tp", "pp", "precision", "recompute", "optimizer"});
  CHECK(text.find(PlanSummary(*plan)) != std::string::npos);
  CHECK(PlanSummary(*plan).starts_with("576 configs: 0 dropped by constraints, 12 dropped by parallelism rules, "));
}

TEST_CASE("plan says which study value it is missing", "[planner]") {
  testing::TempDir dir;
  testing::WriteAll(dir.file("job.sbatch"), "#!/bin/bash\necho {{tp}}\n");
  std::string base =
      "[study]\nname = \"p\"\n[cluster]\ntransport = \"local\"\nworkdir = \"/tmp/x\"\n"
      "[job]\ntemplate = \"job.sbatch\"\nnodes = 1\ngpus_per_node = 8\n";
  auto no_model = ParseStudy(base + "[space]\ntp = [1, 2]\n", dir.file("s.toml"));
  REQUIRE(no_model.ok());
  auto p = PlanStudy(*no_model);
  REQUIRE_FALSE(p.ok());
  CHECK(p.status().message().find("[job.vars] model") != std::string::npos);
  auto unknown = ParseStudy(base + "[job.vars]\nmodel = \"gpt5\"\n[space]\ntp = [1, 2]\n", dir.file("s.toml"));
  REQUIRE(unknown.ok());
  CHECK(PlanStudy(*unknown).status().message().find("\"gpt5\" is not a preset") != std::string::npos);
  auto no_mem = ParseStudy(base + "[job.vars]\nmodel = \"llama3.1-8b\"\nglobal_batch_size = 8\n[space]\ntp = [1, 2]\n",
                           dir.file("s.toml"));
  REQUIRE(no_mem.ok());
  CHECK(PlanStudy(*no_mem).status().message().find("gpu_mem_gib") != std::string::npos);
  auto ok = ParseStudy(
      base + "[job.vars]\nmodel = \"llama3.1-8b\"\nglobal_batch_size = 8\ngpu_mem_gib = 140\n[space]\ntp = [1, 2, 3]\n",
      dir.file("s.toml"));
  REQUIRE(ok.ok());
  auto plan = PlanStudy(*ok);
  REQUIRE(plan.ok());
  CHECK(PlanSummary(*plan) ==
        "3 configs: 0 dropped by constraints, 1 dropped by parallelism rules, 0 predicted OOM "
        "(> 140 GiB incl. 4 GiB headroom), 2 fit");
}

namespace {

// Renders templates/megatron-gpt.sbatch for one configuration of the 70B study and runs it with
// stand-ins for scontrol and srun on PATH; returns the command line srun was given.
std::string LaunchLine(const std::map<std::string, std::string>& params) {
  auto study = LoadStudy(std::string(SLURMSWEEP_SOURCE_DIR) + "/examples/llama3-70b-h200.toml");
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
  auto script = slurm::RenderTemplate(study->job.template_text, study->job.template_path, vars);
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
  auto study = LoadStudy(std::string(SLURMSWEEP_SOURCE_DIR) + "/examples/llama3-70b-h200.toml");
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
  auto plan = PlanStudy(*study);
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
  CHECK(oom == plan->Count(PlanRow::Verdict::kOom));
  CHECK(rule == plan->Count(PlanRow::Verdict::kRule));
  CHECK(fresh == plan->Count(PlanRow::Verdict::kFits));
  CHECK(oom > 0);
  CHECK(rule > 0);
}
