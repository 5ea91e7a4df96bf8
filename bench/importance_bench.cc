// importance_bench: synthetic studies with a known answer for bench/importance_vs_optuna.py, which
// runs Optuna's fANOVA on the same trials and prints both rankings and their agreement. Each
// study is written as `slurmsweep report --csv DIR` writes one: DIR/trials.csv, DIR/metrics.csv
// (the objective's every point) and DIR/importance.csv (reports::ParamImportances on the same
// trials, with their smoothed curves as the report has them). Not a test: it writes and prints.
//
//   build/bin/importance_bench OUT_DIR     # then: bench/importance_vs_optuna.py OUT_DIR/*
//
// The studies (100 logged points per trial, step 10 to 1000; noise N(0, 0.01) a point):
//   u_lr_40        40 trials, lr log-uniform on [1e-4, 1e-1] with its best at 10^-2.5 (a U on the
//                  log axis), optimizer a little (adam 0.03 better), seed nothing: all completed
//   u_lr_12        the same with 12 trials
//   monotone_12    12 trials, lr decides (lower is worse, on the log axis), warmup a little
//                  (linear), seed nothing: all completed
//   two_cont_30    30 trials, lr (log, U) and warmup (linear, monotone) both matter, seed nothing
//   pruned_24      24 trials of the u_lr study, run one after another, each stopped at step 300
//                  or 500 when its smoothed loss is worse than 3/4 of the earlier completed
//                  trials' there (Optuna's PercentilePruner at 75): compared at equal step
//   issue31_7      issue 31's study: 6 completed trials, each its own lr, and the lowest lr pruned
//                  at step 400: compared at equal step
// and, for the last two, NAME_completed_only: the same trials with the stopped ones left out, as
// the report compared them before issue 31.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "base/final_objective.h"
#include "reports/csv.h"
#include "reports/importance_csv.h"
#include "reports/study_report.h"

namespace {

namespace fs = std::filesystem;
using sweep::ParamCell;
using sweep::reports::StudyReport;
using sweep::reports::TrialSummary;

constexpr int kPoints = 100;  // step 10, 20, ..., 1000

struct Trial {
  std::vector<ParamCell> params;
  double final_level = 0;  // the loss it converges to
  double rate = 0;         // how fast: loss(step) = level + (2 - level) exp(-rate step)
};

struct Study {
  std::string name;
  std::vector<std::string> param_names;
  std::vector<bool> param_log;
  std::vector<Trial> trials;
  bool median_rule = false;  // stop trials as a percentile rule would (see the header)
  std::vector<int> stop_at;  // else: the step each trial stopped at (0: completed)
};

ParamCell Number(double v) { return ParamCell(v, fmt::format("{:.4g}", v)); }

// Writes the study's three CSV files into dir, as `slurmsweep report --csv` writes them.
// completed_only: leave the stopped trials out (what the report compared before issue 31).
void Write(const Study& s, const fs::path& dir, std::mt19937_64& rng, bool completed_only = false) {
  std::normal_distribution<double> noise(0, 0.01);
  StudyReport report;
  report.meta.study_name = s.name;
  report.meta.objective_metric = "lm_loss";
  report.meta.param_names = s.param_names;
  report.meta.param_log = s.param_log;
  std::vector<sweep::reports::TrialRow> rows;
  std::string metrics = sweep::reports::MetricsCsvHeader();
  std::vector<std::vector<double>> smoothed_so_far;  // the median rule's evidence: earlier trials
  for (size_t i = 0; i < s.trials.size(); ++i) {
    const Trial& t = s.trials[i];
    std::vector<double> values;
    for (int k = 1; k <= kPoints; ++k) {
      values.push_back(t.final_level + (2 - t.final_level) * std::exp(-t.rate * 10 * k) + noise(rng));
    }
    std::vector<double> smooth = sweep::TrailingMean(values);
    int stop = i < s.stop_at.size() ? s.stop_at[i] : 0;
    if (s.median_rule && smoothed_so_far.size() >= 4) {
      for (int at : {300, 500}) {
        std::vector<double> others;
        for (const auto& o : smoothed_so_far) others.push_back(o[at / 10 - 1]);
        size_t q = others.size() * 3 / 4;
        std::nth_element(others.begin(), others.begin() + q, others.end());
        if (smooth[at / 10 - 1] > others[q]) {
          stop = at;
          break;
        }
      }
    }
    if (stop == 0) smoothed_so_far.push_back(smooth);
    if (stop && completed_only) continue;
    size_t n = stop ? static_cast<size_t>(stop / 10) : values.size();
    values.resize(n);
    smooth.resize(n);
    TrialSummary summary;
    summary.id = static_cast<int64_t>(i + 1);
    summary.key = fmt::format("t-{:03d}", i);
    summary.param_values = t.params;
    summary.state = stop ? "pruned" : "completed";
    summary.steps = static_cast<int64_t>(n) * 10;
    summary.final_value = sweep::FinalObjectiveOf(values)->value;
    for (size_t k = 0; k < n; ++k) {
      int64_t step = static_cast<int64_t>(k + 1) * 10;
      summary.curve.push_back({step, step / 10.0, smooth[k]});
      sweep::reports::AppendMetricsCsvRow(summary.id, summary.key, step, step / 10.0, "lm_loss", values[k], metrics);
    }
    sweep::reports::TrialRow row;
    row.trial_id = summary.id;
    row.trial_key = summary.key;
    row.param_values = t.params;
    row.state = summary.state;
    row.steps = summary.steps;
    row.objective_value = summary.final_value;
    rows.push_back(row);
    report.trials.push_back(std::move(summary));
  }
  fs::create_directories(dir);
  std::ofstream(dir / "trials.csv") << sweep::reports::RenderTrialsCsv(s.param_names, rows);
  std::ofstream(dir / "metrics.csv") << metrics;
  std::ofstream(dir / "importance.csv") << sweep::reports::RenderImportanceCsv(report);
  auto imp = sweep::reports::ParamImportances(report);
  std::string order;
  for (const auto& p : imp.params) order += fmt::format(" {}", s.param_names[p.param]);
  fmt::print("{:<26} {} trials compared{}, left out {}: order{}\n", dir.filename().string(), imp.trials,
             imp.at_step ? fmt::format(" at step {} ({} stopped early)", *imp.at_step, imp.stopped) : "",
             imp.stopped_left_out, order);
}

// A study of n trials: each trial's parameters from `draw`, its level and rate from `model`.
Study Make(std::string name, std::vector<std::string> params, std::vector<bool> log, int n, std::mt19937_64& rng,
           const std::function<Trial(std::mt19937_64&)>& draw) {
  Study s{std::move(name), std::move(params), std::move(log), {}, false, {}};
  for (int i = 0; i < n; ++i) s.trials.push_back(draw(rng));
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: importance_bench OUT_DIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  std::mt19937_64 rng(20261205);
  std::uniform_real_distribution<double> u(0, 1);
  // lr's U on the log axis: best at 10^-2.5; a lower lr also learns more slowly.
  auto u_lr = [&](std::mt19937_64& g) {
    double log_lr = -4 + 3 * u(g);
    bool adam = u(g) < 0.5;
    int seed = static_cast<int>(u(g) * 3);
    Trial t;
    t.params = {Number(std::pow(10, log_lr)), ParamCell(adam ? "adam" : "sgd"), ParamCell(seed)};
    t.final_level = 0.3 + 0.2 * std::pow(log_lr + 2.5, 2) - (adam ? 0.03 : 0);
    t.rate = 0.004 * std::pow(10, (log_lr + 4) / 3);  // 0.004 at 1e-4 to 0.04 at 1e-1
    return t;
  };
  std::vector<Study> studies;
  studies.push_back(Make("u_lr_40", {"lr", "optimizer", "seed"}, {true, false, false}, 40, rng, u_lr));
  studies.push_back(Make("u_lr_12", {"lr", "optimizer", "seed"}, {true, false, false}, 12, rng, u_lr));
  studies.push_back(Make("monotone_12", {"lr", "warmup", "seed"}, {true, false, false}, 12, rng, [&](auto& g) {
    double log_lr = -4 + 3 * u(g), warmup = 100 * u(g);
    Trial t;
    t.params = {Number(std::pow(10, log_lr)), Number(std::round(warmup)), ParamCell(static_cast<int>(u(g) * 3))};
    t.final_level = 0.3 - 0.1 * (log_lr + 1) + 0.0005 * warmup;
    t.rate = 0.01;
    return t;
  }));
  studies.push_back(Make("two_cont_30", {"lr", "warmup", "seed"}, {true, false, false}, 30, rng, [&](auto& g) {
    double log_lr = -4 + 3 * u(g), warmup = 100 * u(g);
    Trial t;
    t.params = {Number(std::pow(10, log_lr)), Number(std::round(warmup)), ParamCell(static_cast<int>(u(g) * 3))};
    t.final_level = 0.3 + 0.2 * std::pow(log_lr + 2.5, 2) + 0.002 * warmup;
    t.rate = 0.01;
    return t;
  }));
  Study pruned = Make("pruned_24", {"lr", "optimizer", "seed"}, {true, false, false}, 24, rng, u_lr);
  pruned.median_rule = true;
  studies.push_back(pruned);
  Study issue = Make("issue31_7", {"lr", "batch"}, {true, false}, 0, rng, u_lr);
  const double lrs[] = {0.001, 0.002, 0.005, 0.01, 0.03, 0.06, 0.12};
  for (int i = 0; i < 7; ++i) {
    Trial t;
    t.params = {Number(lrs[i]), ParamCell(i % 2 ? 32 : 64)};
    // The survivors end alike (the slow ones catch up); at step 400 the low lrs are behind.
    t.final_level = 0.33 + 0.03 * (i % 3 == 1);
    t.rate = 0.004 * std::sqrt(lrs[i] / 0.001);
    issue.trials.push_back(t);
  }
  issue.stop_at = {400};
  studies.push_back(issue);
  for (const Study& s : studies) {
    // The same trials (the same draws of noise) with the stopped ones left out, beside.
    std::mt19937_64 again = rng;
    Write(s, out / s.name, rng);
    if (s.median_rule || !s.stop_at.empty()) Write(s, out / (s.name + "_completed_only"), again, true);
  }
  return 0;
}
