// A synthetic sweep written straight into a store, for the report's tests and bench/report_bench:
// a grid over micro-batch size, learning rate, optimizer and weight decay whose trials end in every way a real
// sweep's do (completed, OOM, timeout, cancelled or pruned part-way, still running, queued, dropped), with
// Megatron-like metrics: a noisy decaying loss, iteration time and TFLOP/s.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "study/study.h"
#include "store/store.h"

namespace sweep::testing {

struct SyntheticOptions {
  int trials = 12;
  int points = 200;            // logged iterations of a trial that runs to the end
  int log_interval = 10;       // steps between logged points
  std::string hostile_value;   // if set, the optimizer of trial 2: a value the report must escape
  double now = 1'800'000'000;  // "current" time: ends of finished trials lie before it
};

inline study::Study SyntheticStudy() {
  study::Study s;
  s.path = "/studies/synthetic.toml";
  s.dir = "/studies";
  s.hash = "0123456789abcdef";
  s.name = "synthetic";
  s.database = "synthetic.db";
  s.objective.metric = "lm_loss";
  s.cluster.transport = "ssh";
  s.cluster.host = "login.example";
  s.cluster.user = "alice";
  s.cluster.partition = "gpu";
  s.job.template_path = "/studies/train.sbatch";
  s.job.nodes = 2;
  s.job.gpus_per_node = 8;
  s.job.vars["seq_length"] = "2048";
  for (const char* name : {"micro_batch_size", "lr", "optimizer", "weight_decay"}) {
    study::ParamSpec p;
    p.name = name;
    s.space.push_back(p);
  }
  return s;
}

// The outcome of the i-th trial (0-based) in a study of n.
inline std::string SyntheticState(int i, int n) {
  if (n >= 6 && i == n - 1) return "dropped";
  if (n >= 6 && i == n - 2) return "pending";
  if (n >= 6 && i == n - 3) return "running";
  if (i % 7 == 4) return "out_of_memory";
  if (i % 11 == 6) return "cancelled";
  if (i % 13 == 9) return "timeout";
  if (i % 17 == 8) return "pruned";
  return "completed";
}

// Records the study and its trials and metrics; returns the study id.
inline int64_t FillSyntheticStudy(store::Store& store, const study::Study& study, const SyntheticOptions& o) {
  const int64_t study_id = *store.UpsertStudy(study.name, study.path, study.hash, o.now - 86400);
  const int mbs_values[] = {1, 2, 4, 8};
  const char* lr_values[] = {"0.0001", "0.0003", "0.001"};
  const char* optimizers[] = {"adamw", "lion"};
  std::vector<store::TrialRecord> trials;
  for (int i = 0; i < o.trials; ++i) {
    int mbs = mbs_values[i % 4];
    const char* lr = lr_values[(i / 4) % 3];
    std::string opt = optimizers[(i / 12) % 2];
    if (i == 1 && !o.hostile_value.empty()) opt = o.hostile_value;
    store::TrialRecord t;
    t.trial_key = fmt::format("t-{:012x}", 0x5eed0000 + i);
    nlohmann::json params = {
        {"lr", std::stod(lr)}, {"micro_batch_size", mbs}, {"optimizer", opt}, {"weight_decay", 0.01 * (1 + i % 40)}};
    t.params_json = params.dump();
    t.state = "new";
    trials.push_back(t);
  }
  (void)store.InsertTrialsIfAbsent(study_id, trials);

  for (int i = 0; i < o.trials; ++i) {
    store::TrialRecord& t = trials[i];
    t.state = SyntheticState(i, o.trials);
    int mbs = mbs_values[i % 4];
    double lr_factor = 1 + 0.4 * ((i / 4) % 3);
    if (t.state == "dropped") {
      t.reason = "constraint 'micro_batch_size <= 8' is false";
      (void)store.UpdateTrial(t);
      continue;
    }
    if (t.state == "pending") {
      t.job_id = std::to_string(1000 + i);
      t.submitted_at = o.now - 60;
      (void)store.UpdateTrial(t);
      continue;
    }
    t.job_id = std::to_string(1000 + i);
    t.submitted_at = o.now - 80000 + i * 10.0;
    t.started_at = *t.submitted_at + 30 + (i % 5) * 45;
    // Bigger micro-batches run faster per sample but take more memory: the OOM ones die early.
    double iter_ms = 400.0 / std::sqrt(static_cast<double>(mbs)) * (1 + 0.02 * (i % 3));
    int points = o.points;
    if (t.state == "out_of_memory") points = 2;
    if (t.state == "cancelled" || t.state == "running") points = o.points / 2;
    if (t.state == "timeout") points = o.points * 3 / 4;
    if (t.state == "pruned") points = o.points / 3;
    std::vector<store::MetricRow> rows;
    uint64_t rng = 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(i + 1);
    double time_s = 0;
    for (int p = 1; p <= points; ++p) {
      int64_t step = static_cast<int64_t>(p) * o.log_interval;
      rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
      double noise = (static_cast<double>(rng >> 11) / 9007199254740992.0 - 0.5) * 0.04;
      double ms = iter_ms * (1 + noise * 0.5);
      time_s += ms * o.log_interval / 1000;
      double loss = 2.0 + 6.0 / (1 + static_cast<double>(step) * 0.004 * lr_factor * (1 + 0.1 * (i % 4))) + noise;
      rows.push_back({step, time_s, "lm_loss", loss});
      rows.push_back({step, time_s, "iter_time_ms", ms});
      rows.push_back({step, time_s, "throughput_tflops", 150.0 * 400.0 / iter_ms / 20});
      rows.push_back({step, time_s, "global_batch_size", static_cast<double>(mbs * 16)});
    }
    (void)store.AppendMetrics(t.id, rows, static_cast<int64_t>(rows.size()) * 100);
    if (t.state == "out_of_memory") t.reason = "OUT_OF_MEMORY";
    if (t.state == "cancelled") t.reason = "cancelled by slurmsweep cancel";
    t.exit_code = t.state == "completed" ? "0:0" : t.state == "out_of_memory" ? "0:125" : "0:15";
    if (t.state != "running") t.ended_at = *t.started_at + time_s + 20;
    (void)store.UpdateTrial(t);
  }
  return study_id;
}

}  // namespace sweep::testing
