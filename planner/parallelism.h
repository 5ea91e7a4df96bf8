// Model presets and the parallelism rules of Megatron-LM: the configurations that Megatron
// would refuse at start-up (or silently misrun) are named and dropped before they reach the queue.
// The rules mirror Megatron's own argument checks, so a dropped trial says which one failed.
// Part of the module's face through planner.h, which includes it (include planner.h).
// Module planner/ (namespace sweep::planner): the LLM planner; uses base/ only.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sweep::planner {

// The shape of a decoder-only transformer, as Megatron-LM's model flags give it.
struct ModelPreset {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_groups = 0;  // --num-query-groups; == heads without grouped-query attention
  int ffn_hidden = 0;
  int vocab = 0;  // before Megatron pads it to a multiple of 128 * TP
  int seq_length = 0;
  bool swiglu = false;  // gated MLP: three weight matrices instead of two
  bool tied_embeddings = true;
  bool learned_positions = false;  // GPT's learned absolute positions; Llama uses RoPE
  bool bias = true;                // biases in the linear layers (GPT yes, Llama no)
  bool rmsnorm = false;            // RMSNorm has one vector per norm, LayerNorm two
};

// "llama3.1-8b", "llama3.1-70b" (also as "llama3-8b", "llama3-70b"), and "gpt3-7b", the
// 7B GPT of Megatron-LM's functional tests (gpt3_7b_*_memory_speed) used to check the planner.
std::optional<ModelPreset> FindModelPreset(std::string_view name);
std::vector<std::string> ModelPresetNames();

struct ParallelConfig {
  int world = 1;  // GPUs in the job
  int tp = 1, pp = 1, cp = 1;
  int vp = 1;  // virtual pipeline stages per rank (interleaved 1F1B); 1 = off
  int mbs = 1;
  int gbs = 1;
  bool sequence_parallel = false;
  std::string recompute = "none";  // "none" | "selective" | "full"
  std::string recompute_method;    // "uniform" | "block"; only with full
  int recompute_layers = 0;        // --recompute-num-layers; only with full
};

// world / (TP * PP * CP); 0 when it does not divide.
int DataParallelSize(const ParallelConfig& c);

// The first rule `c` breaks for `model`, as a sentence naming the numbers
// (e.g. "heads (64) not divisible by TP (3)"), or nothing when Megatron would accept it.
std::optional<std::string> CheckParallelism(const ParallelConfig& c, const ModelPreset& model);

}  // namespace sweep::planner
