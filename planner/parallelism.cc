// Model presets and Megatron-LM's parallelism rules (see parallelism.h).
#include "planner/parallelism.h"

#include <fmt/format.h>

namespace sweep::planner {
namespace {

std::vector<ModelPreset> Presets() {
  // Llama 3.1 shapes from Meta's published configs; gpt3-7b from Megatron-LM's
  // tests/functional_tests/test_cases/gpt/gpt3_7b_tp1_pp4_memory_speed/model_config.yaml
  // (no --swiglu, so FFN = 4h; GPT defaults: LayerNorm, biases, learned positions).
  ModelPreset l8{.name = "llama3.1-8b",
                 .layers = 32,
                 .hidden = 4096,
                 .heads = 32,
                 .kv_groups = 8,
                 .ffn_hidden = 14336,
                 .vocab = 128256,
                 .seq_length = 8192,
                 .swiglu = true,
                 .tied_embeddings = false,
                 .learned_positions = false,
                 .bias = false,
                 .rmsnorm = true};
  ModelPreset l70 = l8;
  l70.name = "llama3.1-70b";
  l70.layers = 80;
  l70.hidden = 8192;
  l70.heads = 64;
  l70.ffn_hidden = 28672;
  ModelPreset g7{.name = "gpt3-7b",
                 .layers = 32,
                 .hidden = 4096,
                 .heads = 32,
                 .kv_groups = 8,
                 .ffn_hidden = 16384,
                 .vocab = 131072,
                 .seq_length = 8192,
                 .swiglu = false,
                 .tied_embeddings = false,
                 .learned_positions = true,
                 .bias = true,
                 .rmsnorm = false};
  return {l8, l70, g7};
}

}  // namespace

std::optional<ModelPreset> FindModelPreset(std::string_view name) {
  std::string n(name);
  if (n == "llama3-8b") n = "llama3.1-8b";
  if (n == "llama3-70b") n = "llama3.1-70b";
  for (const auto& p : Presets())
    if (p.name == n) return p;
  return std::nullopt;
}

std::vector<std::string> ModelPresetNames() {
  std::vector<std::string> names;
  for (const auto& p : Presets()) names.push_back(p.name);
  return names;
}

int DataParallelSize(const ParallelConfig& c) {
  int model_parallel = c.tp * c.pp * c.cp;
  if (model_parallel <= 0 || c.world % model_parallel != 0) return 0;
  return c.world / model_parallel;
}

std::optional<std::string> CheckParallelism(const ParallelConfig& c, const ModelPreset& m) {
  if (c.world < 1 || c.tp < 1 || c.pp < 1 || c.cp < 1 || c.vp < 1 || c.mbs < 1 || c.gbs < 1)
    return fmt::format("sizes must be positive (world {}, TP {}, PP {}, CP {}, VP {}, MBS {}, GBS {})", c.world, c.tp,
                       c.pp, c.cp, c.vp, c.mbs, c.gbs);
  if (c.world % (c.tp * c.pp * c.cp) != 0)
    return fmt::format("world size ({}) not divisible by TP*PP*CP ({}*{}*{}={})", c.world, c.tp, c.pp, c.cp,
                       c.tp * c.pp * c.cp);
  if (m.heads % c.tp != 0) return fmt::format("heads ({}) not divisible by TP ({})", m.heads, c.tp);
  if (m.kv_groups % c.tp != 0) return fmt::format("KV groups ({}) not divisible by TP ({})", m.kv_groups, c.tp);
  if (m.layers % c.pp != 0) return fmt::format("layers ({}) not divisible by PP ({})", m.layers, c.pp);
  if (c.vp > 1) {
    // Megatron only interleaves a pipeline of at least 2 stages.
    if (c.pp < 2) return fmt::format("virtual pipeline stages ({}) need PP > 1", c.vp);
    if (m.layers % (c.pp * c.vp) != 0)
      return fmt::format("layers ({}) not divisible by PP*VP ({}*{}={})", m.layers, c.pp, c.vp, c.pp * c.vp);
  }
  // Context parallelism splits the sequence into 2*CP chunks for load balance.
  if (c.cp > 1 && m.seq_length % (2 * c.cp) != 0)
    return fmt::format("sequence length ({}) not divisible by 2*CP ({})", m.seq_length, 2 * c.cp);
  int dp = DataParallelSize(c);
  if (c.gbs % (c.mbs * dp) != 0)
    return fmt::format("global batch ({}) not divisible by MBS*DP ({}*{}={})", c.gbs, c.mbs, dp, c.mbs * dp);
  if (c.tp == 1 && c.sequence_parallel) return std::string("sequence parallelism needs TP > 1");
  if (c.recompute == "none") {
    if (!c.recompute_method.empty() || c.recompute_layers != 0)
      return std::string("recompute method/layers given without recompute");
  } else if (c.recompute == "selective") {
    if (!c.recompute_method.empty() || c.recompute_layers != 0)
      return std::string("selective recompute takes no recompute method or layers");
  } else if (c.recompute == "full") {
    if (c.recompute_method != "uniform" && c.recompute_method != "block")
      return fmt::format("full recompute needs method uniform or block (got \"{}\")", c.recompute_method);
    int per_stage = m.layers / c.pp;
    if (c.recompute_layers < 1 || c.recompute_layers > per_stage)
      return fmt::format("full recompute layers ({}) outside 1..layers/PP ({})", c.recompute_layers, per_stage);
  } else {
    return fmt::format("unknown recompute \"{}\" (none, selective or full)", c.recompute);
  }
  return std::nullopt;
}

}  // namespace sweep::planner
