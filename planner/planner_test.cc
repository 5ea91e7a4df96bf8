// Tests of the memory planner and model FLOPs: hand-checkable cases and the planner against the
// memory Megatron-LM measured in recorded runs (tests/data/megatron_cases.csv). `plan` of a
// study file, and the run loop acting on it, are run/plan_test.cc's.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include "planner/planner.h"
#include "tests/test_util.h"

using namespace sweep;
using namespace sweep::planner;

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
