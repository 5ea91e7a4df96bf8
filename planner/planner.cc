// Memory planner and model FLOPs (see planner.h for the formulas and their sources).
#include "planner/planner.h"

#include "base/terminal.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace sweep::planner {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

// Megatron pads the vocabulary so each TP rank's slice is a multiple of 128.
double PaddedVocab(const ModelPreset& m, int tp) {
  double multiple = 128.0 * tp;
  return std::ceil(m.vocab / multiple) * multiple;
}

double KvDim(const ModelPreset& m) { return double(m.hidden) / m.heads * m.kv_groups; }

// GEMM weights of one layer on one TP rank.
double LayerLinearParams(const ModelPreset& m, int tp) {
  double h = m.hidden, f = m.ffn_hidden;
  double attention = h * (h + 2 * KvDim(m)) + h * h;
  double mlp = (m.swiglu ? 3 : 2) * h * f;
  return (attention + mlp) / tp;
}

// Everything else of one layer on one TP rank: biases (the row-parallel ones replicated) and
// the two norms (replicated).
double LayerOtherParams(const ModelPreset& m, int tp) {
  double h = m.hidden, f = m.ffn_hidden;
  double bias = m.bias ? ((h + 2 * KvDim(m)) + (m.swiglu ? 2 : 1) * f) / tp + 2 * h : 0;
  double norms = 2 * (m.rmsnorm ? 1 : 2) * h;
  return bias + norms;
}

}  // namespace

double BytesPerParam(const std::string& optimizer, bool distributed_optimizer, int dp_cp) {
  // bf16 weight + fp32 gradient buffer stay on every rank; the fp32 master weights and the
  // optimizer moments are what the distributed optimizer shards.
  double sharded = optimizer == "sgd" ? 4 + 4 : 4 + 8;
  return 2 + 4 + (distributed_optimizer ? sharded / std::max(dp_cp, 1) : sharded);
}

double LayerActivationBytes(const TrainingConfig& c, const ModelPreset& m) {
  const auto& p = c.par;
  double s = double(m.seq_length) / p.cp, b = p.mbs, h = m.hidden, f = m.ffn_hidden, t = p.tp;
  double sbh = s * b * h;
  // Korthikanti et al. 2022, Table 2: the parts TP splits (Q, K, V, attention output, the MLP's
  // hidden activations) and the parts only sequence parallelism splits (norm inputs, QKV and
  // FC1 inputs, the two dropout masks: 10sbh).
  double qkv = 2 * s * b * (h + 2 * KvDim(m));
  // FC1's output and the activation function's output (FC2's input); SwiGLU's FC1 has two.
  double mlp_hidden = m.swiglu ? (2 * 2 * s * b * f + 2 * s * b * f) : (2 * s * b * f + 2 * s * b * f);
  double split = qkv + 2 * sbh + mlp_hidden;
  double unsplit = 10 * sbh;
  double scores = 5.0 * m.heads * s * s * b;  // softmax, its dropout mask and output
  // Flash attention never stores them; selective recompute recomputes exactly them.
  if (c.flash_attention || p.recompute == "selective") scores = 0;
  bool sp = p.sequence_parallel && p.tp > 1;
  return split / t + (sp ? unsplit / t : unsplit) + scores / t;
}

double ModelParams(const ModelPreset& m) {
  double h = m.hidden;
  double layers = m.layers * (LayerLinearParams(m, 1) + LayerOtherParams(m, 1));
  double embedding = PaddedVocab(m, 1) * h * (m.tied_embeddings ? 1 : 2);
  double positions = m.learned_positions ? double(m.seq_length) * h : 0;
  return layers + embedding + positions + (m.rmsnorm ? 1 : 2) * h;
}

MemoryEstimate EstimateMemory(const TrainingConfig& c, const ModelPreset& m) {
  const auto& p = c.par;
  MemoryEstimate e;
  int dp = std::max(DataParallelSize(p), 1);
  e.bytes_per_param = BytesPerParam(c.optimizer, c.distributed_optimizer, dp * p.cp);
  double h = m.hidden;
  int stage_layers = m.layers / p.pp;
  double layer_params = LayerLinearParams(m, p.tp) + LayerOtherParams(m, p.tp);
  double vocab_slice = PaddedVocab(m, p.tp) / p.tp * h;

  // Parameters: the first stage has the embedding (and learned positions, replicated over
  // TP); the last the final norm and the output layer, which with PP > 1 is its own copy
  // even when tied.
  double first = stage_layers * layer_params + vocab_slice + (m.learned_positions ? double(m.seq_length) * h : 0);
  double last_extra = (m.rmsnorm ? 1 : 2) * h + ((!m.tied_embeddings || p.pp > 1) ? vocab_slice : 0);
  double last = p.pp == 1 ? first + last_extra : stage_layers * layer_params + last_extra;
  e.first.params = first;
  e.last.params = last;

  // Activations of one microbatch through this stage's layers.
  double layer_act = LayerActivationBytes(c, m);
  double s = double(m.seq_length) / p.cp, b = p.mbs;
  bool sp = p.sequence_parallel && p.tp > 1;
  double layer_input = 2 * s * b * h / (sp ? p.tp : 1);
  double stored = stage_layers * layer_act, working = 0;
  if (p.recompute == "full") {
    int n = std::max(p.recompute_layers, 1);
    if (p.recompute_method == "block") {
      int recomputed = std::min(n, stage_layers);
      stored = recomputed * layer_input + (stage_layers - recomputed) * layer_act;
      working = layer_act;
    } else {  // uniform: groups of n layers keep only their input
      stored = std::ceil(double(stage_layers) / n) * layer_input;
      working = std::min(n, stage_layers) * layer_act;
    }
  }
  // Microbatches in flight on pipeline rank r, in units of the whole stage's layers. 1F1B:
  // PP - r, at most the number of microbatches. Interleaved (VP chunks of L/(PP*VP) layers):
  // Megatron's warm-up runs (PP - r - 1) * 2 + (VP - 1) * PP chunks ahead, plus the one in
  // steady state, at most all chunks of the batch; for the first stage that is Korthikanti et
  // al.'s PP * (1 + (PP - 1) / (PP * VP)).
  double microbatches = double(p.gbs) / (double(p.mbs) * dp);
  auto in_flight = [&](int rank) {
    if (p.vp <= 1) return std::min<double>(p.pp - rank, microbatches);
    double chunks = (p.pp - rank - 1) * 2.0 + (p.vp - 1.0) * p.pp + 1;
    return std::min(chunks, microbatches * p.vp) / p.vp;
  };
  e.first.microbatches_in_flight = in_flight(0);
  e.last.microbatches_in_flight = in_flight(p.pp - 1);
  double logits = 4 * s * b * PaddedVocab(m, p.tp) / p.tp;
  e.first.activation_bytes = e.first.microbatches_in_flight * stored + working + (p.pp == 1 ? logits : 0);
  e.last.activation_bytes =
      p.pp == 1 ? e.first.activation_bytes : e.last.microbatches_in_flight * stored + working + logits;

  for (StageMemory* st : {&e.first, &e.last}) {
    st->model_state_bytes = st->params * e.bytes_per_param;
    st->fp8_bytes = c.precision == "fp8" ? 2 * stage_layers * LayerLinearParams(m, p.tp) : 0;
  }
  return e;
}

double ModelFlopsPerToken(const ModelPreset& m) {
  // training.py: 12 = 3 (forward + backward) * 2 (FLOPs per multiply-add) * 2 (GEMMs per
  // projection pair), times L * h^2 * (attention + MLP + logits) per token.
  double h = m.hidden, L = m.layers;
  double attention = 1 + double(m.kv_groups) / m.heads + double(m.seq_length) / h;
  double mlp = double(m.ffn_hidden) / h * (m.swiglu ? 1.5 : 1.0);
  double logits = PaddedVocab(m, 1) / (2 * L * h);
  return 12 * L * h * h * (attention + mlp + logits);
}

double Mfu(double tokens_per_s, int gpus, const ModelPreset& m, double peak_tflops_per_gpu) {
  if (gpus <= 0 || peak_tflops_per_gpu <= 0) return 0;
  return tokens_per_s * ModelFlopsPerToken(m) / gpus / (peak_tflops_per_gpu * 1e12);
}

// ---- slurmsweep plan ----

namespace {

// A knob's value: a parameter of this configuration first, then [job.vars].
struct Knobs {
  const PlanJob& job;
  const TrialSpec& trial;

  std::optional<std::string> Get(const std::string& name) const {
    for (const auto& [k, v] : trial.params)
      if (k == name) return ParamToString(v);
    auto it = job.vars.find(name);
    if (it != job.vars.end()) return it->second;
    return std::nullopt;
  }
  bool IsParam(const std::string& name) const {
    return std::any_of(trial.params.begin(), trial.params.end(), [&](const auto& p) { return p.first == name; });
  }
  Result<double> Number(const std::string& name, std::optional<double> fallback) const {
    auto v = Get(name);
    if (!v) {
      if (fallback) return *fallback;
      return Status::InvalidArgument(fmt::format("plan needs `{}` as a parameter or in [job.vars]", name));
    }
    double x = 0;
    auto [ptr, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
    if (ec != std::errc() || ptr != v->data() + v->size())
      return Status::InvalidArgument(fmt::format("`{}` = \"{}\" is not a number", name, *v));
    return x;
  }
  Result<int> Int(const std::string& name, std::optional<int> fallback) const {
    auto x = Number(name, fallback ? std::optional<double>(*fallback) : std::nullopt);
    if (!x.ok()) return x.status();
    if (*x != std::floor(*x)) return Status::InvalidArgument(fmt::format("`{}` = {} is not an integer", name, *x));
    return int(*x);
  }
  std::string Text(const std::string& name, const std::string& fallback) const { return Get(name).value_or(fallback); }
};

Result<TrainingConfig> ConfigFor(const Knobs& k, int world, int* gbs_out) {
  TrainingConfig c;
  auto& p = c.par;
  p.world = world;
  auto tp = k.Int("tp", 1), pp = k.Int("pp", 1), cp = k.Int("cp", 1), vp = k.Int("vp", 1), mbs = k.Int("mbs", 1),
       gbs = k.Int("global_batch_size", std::nullopt);
  for (const auto* r : {&tp, &pp, &cp, &vp, &mbs, &gbs})
    if (!r->ok()) return r->status();
  p.tp = *tp, p.pp = *pp, p.cp = *cp, p.vp = *vp, p.mbs = *mbs, p.gbs = *gbs;
  *gbs_out = *gbs;
  p.sequence_parallel = p.tp > 1;
  p.recompute = k.Text("recompute", "none");
  // As the template: method and layers from [job.vars] apply to full recompute only; as
  // parameters they are checked for every configuration.
  bool method_param = k.IsParam("recompute_method"), layers_param = k.IsParam("recompute_num_layers");
  if (p.recompute == "full" || method_param) p.recompute_method = k.Text("recompute_method", "uniform");
  if (p.recompute == "full" || layers_param) {
    auto n = k.Int("recompute_num_layers", 1);
    if (!n.ok()) return n.status();
    p.recompute_layers = *n;
  }
  c.precision = k.Text("precision", "bf16");
  if (c.precision != "bf16" && c.precision != "fp8")
    return Status::InvalidArgument(fmt::format("precision \"{}\": plan knows bf16 and fp8", c.precision));
  c.optimizer = k.Text("optimizer", "adam");
  if (c.optimizer != "adam" && c.optimizer != "sgd")
    return Status::InvalidArgument(fmt::format("optimizer \"{}\": plan knows adam and sgd", c.optimizer));
  std::string dist = k.Text("dist_opt", "true");
  if (dist != "true" && dist != "false")
    return Status::InvalidArgument(fmt::format("dist_opt \"{}\": true or false", dist));
  c.distributed_optimizer = dist == "true";
  return c;
}

}  // namespace

int Plan::Count(PlanRow::Verdict v) const {
  return int(std::count_if(rows.begin(), rows.end(), [v](const PlanRow& r) { return r.verdict == v; }));
}

Result<Plan> PlanTrials(const PlanJob& job, std::vector<TrialSpec> trials) {
  Plan plan;
  std::string presets = fmt::format("{}", fmt::join(ModelPresetNames(), ", "));
  auto model_name = job.vars.find("model");
  if (model_name == job.vars.end())
    return Status::InvalidArgument("plan needs [job.vars] model (one of: " + presets + ")");
  auto model = FindModelPreset(model_name->second);
  if (!model)
    return Status::InvalidArgument(
        fmt::format("[job.vars] model \"{}\" is not a preset (one of: {})", model_name->second, presets));
  plan.model = *model;
  plan.world = job.nodes * std::max(job.gpus_per_node, 1);
  TrialSpec none;
  Knobs study_knobs{job, none};
  auto gpu_mem = study_knobs.Number("gpu_mem_gib", std::nullopt);
  if (!gpu_mem.ok()) return gpu_mem.status();
  auto headroom = study_knobs.Number("headroom_gib", 4.0);
  if (!headroom.ok()) return headroom.status();
  auto seq = study_knobs.Int("seq_length", plan.model.seq_length);
  if (!seq.ok()) return seq.status();
  plan.model.seq_length = *seq;
  plan.gpu_mem_gib = *gpu_mem;
  plan.headroom_gib = *headroom;

  for (auto& trial : trials) {
    PlanRow row;
    row.trial = std::move(trial);
    if (!row.trial.dropped_reason.empty()) {
      row.verdict = PlanRow::Verdict::kConstraint;
      row.reason = row.trial.dropped_reason;
      plan.rows.push_back(std::move(row));
      continue;
    }
    Knobs knobs{job, row.trial};
    int gbs = 0;
    auto config = ConfigFor(knobs, plan.world, &gbs);
    if (!config.ok()) return config.status().WithContext("configuration " + row.trial.key);
    if (auto rule = CheckParallelism(config->par, plan.model)) {
      row.verdict = PlanRow::Verdict::kRule;
      row.reason = *rule;
    } else {
      row.memory = EstimateMemory(*config, plan.model);
      row.predicted_bytes = row.memory->Peak().Total() + plan.headroom_gib * kGiB;
      if (row.predicted_bytes > plan.gpu_mem_gib * kGiB) {
        row.verdict = PlanRow::Verdict::kOom;
        row.reason = fmt::format("predicted {:.1f} GiB > {:g} GiB", row.predicted_bytes / kGiB, plan.gpu_mem_gib);
      }
    }
    plan.rows.push_back(std::move(row));
  }
  return plan;
}

std::string PlanSummary(const Plan& plan) {
  using V = PlanRow::Verdict;
  return fmt::format(
      "{} configs: {} dropped by constraints, {} dropped by parallelism rules, {} predicted OOM "
      "(> {:g} GiB incl. {:g} GiB headroom), {} fit",
      plan.rows.size(), plan.Count(V::kConstraint), plan.Count(V::kRule), plan.Count(V::kOom), plan.gpu_mem_gib,
      plan.headroom_gib, plan.Count(V::kFits));
}

std::string RenderPlan(const Plan& plan, const std::vector<std::string>& param_names) {
  const auto& m = plan.model;
  std::string out = fmt::format(
      "model {}: {:.2f}B parameters, {:.3g} GFLOP per token (Megatron model FLOPs); {} GPUs, {:g} GiB each\n", m.name,
      ModelParams(m) / 1e9, ModelFlopsPerToken(m) / 1e9, plan.world, plan.gpu_mem_gib);
  std::string header;
  for (const auto& n : param_names) header += fmt::format("{:<10} ", n);
  // model: weights + grads + optimizer state; act: activations in flight; GiB: all + headroom.
  out += fmt::format("{:<16} {}{:>6} {:>7} {:>7} {:>7} {:>8}  {}\n", "trial", header, "model", "act", "fp8", "GiB",
                     "verdict", "");
  for (const auto& r : plan.rows) {
    std::string values;
    for (const auto& n : param_names) {
      std::string v = "-";
      for (const auto& [k, x] : r.trial.params)
        if (k == n) v = TerminalSafe(ParamToString(x));
      values += fmt::format("{:<10} ", v);
    }
    if (r.memory) {
      const auto& peak = r.memory->Peak();
      out += fmt::format("{:<16} {}{:>6.1f} {:>7.1f} {:>7.1f} {:>7.1f} {:>8}  {}\n", r.trial.key, values,
                         peak.model_state_bytes / kGiB, peak.activation_bytes / kGiB, peak.fp8_bytes / kGiB,
                         r.predicted_bytes / kGiB, r.verdict == PlanRow::Verdict::kOom ? "OOM" : "fits", r.reason);
    } else {
      out += fmt::format("{:<16} {}{:>6} {:>7} {:>7} {:>7} {:>8}  {}\n", r.trial.key, values, "-", "-", "-", "-",
                         r.verdict == PlanRow::Verdict::kRule ? "rule" : "dropped", r.reason);
    }
  }
  out += PlanSummary(plan) + "\n";
  return out;
}

// ---- learning from a CUDA OOM ----

namespace {

// How much activation memory a recompute setting keeps: none > selective > full.
int RecomputeRank(const std::string& v) { return v == "full" ? 0 : v == "selective" ? 1 : 2; }

double AsNumber(const ParamValue& v) {
  if (auto i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (auto d = std::get_if<double>(&v)) return *d;
  return 0;
}

}  // namespace

bool NeedsAtLeastAsMuchMemory(const TrialSpec& candidate, const TrialSpec& oom) {
  bool any_axis = false;
  for (size_t i = 0; i < oom.params.size(); ++i) {
    const auto& [name, ov] = oom.params[i];
    const ParamValue& cv = candidate.params[i].second;
    if (name == "mbs" || name == "micro_batch_size") {
      any_axis = true;
      if (AsNumber(cv) < AsNumber(ov)) return false;
    } else if (name == "tp" || name == "pp" || name == "cp") {
      any_axis = true;
      if (AsNumber(cv) > AsNumber(ov)) return false;
    } else if (name == "recompute") {
      any_axis = true;
      if (RecomputeRank(ParamToString(cv)) < RecomputeRank(ParamToString(ov))) return false;
    } else if (cv != ov) {
      return false;
    }
  }
  return any_axis;
}

}  // namespace sweep::planner
