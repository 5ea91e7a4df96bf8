// Memory planner: predicts each configuration's memory per GPU and Megatron's model FLOPs, so
// configurations that cannot fit are dropped before they cost queue time (`slurmsweep plan`).
//
// Model states (bytes per parameter, Megatron-LM's mixed precision with an fp32 gradient buffer):
//   adam: bf16 weight 2 + fp32 grad 4 + fp32 master weight 4 + Adam m and v 8 = 18;
//         with the distributed optimizer the last 12 are sharded over DP*CP: 6 + 12/(DP*CP).
//   sgd:  Megatron's SGD keeps momentum (--sgd-momentum 0.9): 2 + 4 + master 4 + momentum 4 = 14;
//         distributed: 6 + 8/(DP*CP).
// Activations per layer and microbatch follow Korthikanti et al. 2022 ("Reducing Activation
// Recomputation in Large Transformer Models"), generalised to grouped-query attention and a
// SwiGLU MLP of any width (they reduce to the paper's 34sbh + 5as^2b for GPT). Megatron with
// Transformer Engine uses flash/fused attention, which never stores the a*s^2 score matrices,
// so by default that term is dropped and selective recompute (which recomputes exactly that
// part) needs as much memory as none. Full recompute keeps each group's input plus one group's
// activations while it is recomputed. Under 1F1B the first stage holds PP microbatches in
// flight (at most the number of microbatches), the last one (more when interleaved); the last
// stage also holds the fp32 logits (4*s*b*vocab/TP). fp8 (Transformer Engine): the weights
// stay bf16 and an fp8 copy plus its transpose is cached for each GEMM weight, 2 bytes per
// linear-layer parameter; activations are counted at bf16 (an upper bound: TE keeps some GEMM
// inputs in fp8).
// Headroom (CUDA context, NCCL buffers, allocator fragmentation) is a number the study gives.
// Module planner/ (namespace sweep::planner): the LLM planner; uses base/ only. This is its one public
// header; parallelism.h, which it includes, is part of that face.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/params.h"
#include "base/status.h"
#include "planner/parallelism.h"

namespace sweep::planner {

struct TrainingConfig {
  ParallelConfig par;
  std::string precision = "bf16";  // "bf16" | "fp8"
  std::string optimizer = "adam";  // "adam" | "sgd"
  bool distributed_optimizer = true;
  bool flash_attention = true;  // false: the attention scores are stored (5as^2b per layer)
};

// One GPU of one pipeline stage, in bytes.
struct StageMemory {
  double params = 0;             // parameters this GPU holds
  double model_state_bytes = 0;  // weights + grads + optimizer state
  double activation_bytes = 0;   // for all microbatches in flight
  double fp8_bytes = 0;
  double microbatches_in_flight = 0;
  double Total() const { return model_state_bytes + activation_bytes + fp8_bytes; }
};

struct MemoryEstimate {
  double bytes_per_param = 0;
  StageMemory first, last;  // the same stage when PP = 1
  const StageMemory& Peak() const { return first.Total() >= last.Total() ? first : last; }
};

double BytesPerParam(const std::string& optimizer, bool distributed_optimizer, int dp_cp);
// Activation bytes of one transformer layer for one microbatch, without recompute.
double LayerActivationBytes(const TrainingConfig& c, const ModelPreset& m);
// For a configuration CheckParallelism accepts.
MemoryEstimate EstimateMemory(const TrainingConfig& c, const ModelPreset& m);
// Total parameters of the model (embedding counted once when tied).
double ModelParams(const ModelPreset& m);
// Megatron-LM's num_floating_point_operations (training.py) per token: forward and backward,
// attention scores included, recompute excluded (model FLOPs, as MFU wants).
double ModelFlopsPerToken(const ModelPreset& m);
// Model FLOPs utilisation: achieved model FLOP/s per GPU over the GPU's peak.
double Mfu(double tokens_per_s, int gpus, const ModelPreset& m, double peak_tflops_per_gpu);

// `slurmsweep plan`: each configuration of the study's space with its predicted memory or the
// reason it is dropped. Reads from the study (to be promoted to a [model] table later):
//   [job.vars] model (preset name, required), gpu_mem_gib (required), global_batch_size
//   (required unless a parameter), seq_length (default: the preset's), headroom_gib (default 4),
//   recompute_method (default "uniform") and recompute_num_layers (default 1), used for full
//   recompute only, as the megatron-gpt template does;
//   parameters (or vars) tp, pp, cp, vp, mbs, precision, recompute, optimizer, dist_opt
//   (defaults 1, 1, 1, 1, 1, bf16, none, adam, true); sequence parallelism whenever TP > 1.
struct PlanRow {
  TrialSpec trial;
  enum class Verdict { kFits, kConstraint, kRule, kOom } verdict = Verdict::kFits;
  std::string reason;                    // why it is dropped
  std::optional<MemoryEstimate> memory;  // when the rules pass
  double predicted_bytes = 0;            // peak stage total + headroom
};

struct Plan {
  ModelPreset model;
  int world = 0;
  double gpu_mem_gib = 0, headroom_gib = 0;
  std::vector<PlanRow> rows;
  int Count(PlanRow::Verdict v) const;
};

// What the plan reads of a study besides each configuration's parameters: its [job.vars] and
// the GPUs a trial gets (results/phases.h fills it in from a Study).
struct PlanJob {
  std::map<std::string, std::string> vars;
  int nodes = 1;
  int gpus_per_node = 0;  // 0 (no GPUs asked for) counts as 1
};

// The plan of `trials`, the study's expanded space (ExpandStudy in results/phases.h, which
// also offers PlanStudy(study) doing both).
Result<Plan> PlanTrials(const PlanJob& job, std::vector<TrialSpec> trials);
// The table (one line per configuration) and the summary line.
std::string RenderPlan(const Plan& plan, const std::vector<std::string>& param_names);
std::string PlanSummary(const Plan& plan);

// Learning from a CUDA OOM: true when `candidate` needs at least as much GPU memory as `oom` on
// every axis (the same everything else, a micro-batch ("mbs" or "micro_batch_size") at least as
// large, tensor, pipeline and context parallelism no larger, no more recomputation), so it would
// fail the same way. Both trials come from the same space (parameters in the same order).
bool NeedsAtLeastAsMuchMemory(const TrialSpec& candidate, const TrialSpec& oom);

}  // namespace sweep::planner
