// stopping_tick_bench: what one tick of early stopping costs the run loop at scale (issue 20), in
// time and memory, for the incremental series (StoppingState, what the run loop uses) against the
// way it was done before, measured in the same run on the same curves: every trial's stored curve
// copied into the rules' input and every series rebuilt from scratch (EvaluateStopping).
//
// A synthetic study of TRIALS running trials (default 1000), all rules on (divergence, race,
// halving, median, patience, throughput), each trial with STORED points already (default 10k: the
// state is built from them as a restarted run does) and NEW points per trial per tick (default 10).
// Decisions are computed and counted but not applied, so every tick has TRIALS running trials.
// Prints per-tick medians over ROUNDS ticks of the thread's CPU time (and the wall time): the incremental tick, the
// rebuilding tick, their ratio, and the incremental tick against the issue's limit of 0.05 s; then the bytes each keeps
// per trial. Run with --stored at 1000 and 10000 to see that the incremental tick grows with new points, not stored
// ones. Not a test: it prints.
// --repeats N: a study with repeats over seeds, trials grouped N per configuration (the same parameters,
// speed and level; their own noise), never judged against each other: the incremental tick is one
// evaluation with each trial's configuration set (what the run loop does), and --per-view times beside
// it the way the run loop did it before, one evaluation per running trial in a view without its siblings.
//
//   build/bin/stopping_tick_bench [--trials N] [--stored N] [--new N] [--rounds N] [--no-rebuild]
//                                 [--repeats N [--per-view]]
//   build/bin/stopping_tick_bench --write-study DIR [--trials N] [--stored N]
// --write-study writes, for bench/scale_bench.sh's stopping mode, the same study as a study file
// (DIR/study.toml, all rules on, local transport) and its database: TRIALS trials recorded running
// as jobs 700001..., each with STORED points of lm_loss and nan_iters, and an empty log file each;
// DIR/jobs.txt lists "job id|comment|job name|log" for the squeue that scale_bench.sh puts first on PATH.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cmath>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "base/clock.h"
#include "run/runner.h"
#include "slurm/transport.h"
#include "stopping/early_stop.h"
#include "store/store.h"
#include "study/loader.h"

namespace sweep {
namespace {

using stopping::EvaluateStopping;
using stopping::StoppingState;
using stopping::TrialProgress;

constexpr double kLimitS = 0.05;

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

// CPU time of this thread: what a tick costs, whatever else the machine is running (wall time on
// a shared 2-core machine varies several-fold from run to run).
double CpuNow() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// A trial's curve: Megatron-like, logged every 10 iterations; speed by micro-batch size, level by
// learning rate, noise and a checkpoint stall every 2000 iterations.
struct Generator {
  int i;
  double seconds_per_it, level;
  std::mt19937_64 rng;
  std::normal_distribution<double> noise{0, 0.02};
  int64_t step = 0;
  double t = 0;
  CurvePoint Next() {
    step += 10;
    if (step > 10) t += 10 * seconds_per_it * (1 + 0.05 * noise(rng)) + (step % 2000 == 0 ? 20 : 0);
    return {step, t, level + 4 * std::exp(-static_cast<double>(step) / 20000.0) + noise(rng)};
  }
};

// How the run loop kept repeats apart before the rules knew configurations: each running trial
// judged in a view without its siblings, one evaluation per running trial (stopping_group_test.cc
// keeps the same loop as its reference).
std::vector<stopping::StopDecision> PerView(StoppingState& state, std::vector<TrialProgress> trials) {
  std::vector<stopping::StopDecision> out;
  for (size_t i = 0; i < trials.size(); ++i) {
    if (trials[i].phase != stopping::TrialPhase::kRunning) continue;
    std::vector<TrialProgress> view;
    for (size_t j = 0; j < trials.size(); ++j) {
      if (j == i || trials[i].configuration.empty() || trials[j].configuration != trials[i].configuration) {
        view.push_back(trials[j]);
        view.back().configuration.clear();
      }
    }
    for (const stopping::StopDecision& d : state.Evaluate(view)) {
      if (d.trial_id != trials[i].id) continue;
      out.push_back(d);
      for (auto& t : trials) {
        if (t.id == d.trial_id) t.phase = stopping::TrialPhase::kStopped;
      }
    }
  }
  return out;
}

[[noreturn]] void Fail(const std::string& what) {
  fmt::print(stderr, "stopping_tick_bench: {}\n", what);
  std::exit(1);
}

// The study of the timing mode as files the real binary runs (see the top comment).
int WriteStudy(const std::string& dir_arg, int trials, int stored) {
  namespace fs = std::filesystem;
  fs::path dir = fs::absolute(dir_arg);
  fs::create_directories(dir / "logs");
  std::ofstream(dir / "job.sbatch") << "#!/bin/bash\nexec sleep 1000\n";
  std::string lrs;
  for (int k = 0; k < (trials + 3) / 4; ++k) lrs += fmt::format("{}{:g}", k ? ", " : "", 1e-4 * (1 + k));
  double budget = 10.0 * stored * 0.4 / 2;
  std::string text = fmt::format(R"([study]
name = "stopscale"

[cluster]
transport = "local"
workdir = "{0}/work"
max_concurrent = {1}
poll_interval_s = 1
max_poll_interval_s = 1
query_gap_s = 0

[job]
template = "job.sbatch"

[objective]
metric = "lm_loss"

[stopping]
budget_s = {2}
target_loss = 2.05

[stopping.divergence]
max_nan_iters = 100
spike_factor = 3

[stopping.race]

[stopping.halving]
min_time_s = {3}

[stopping.median]

[stopping.patience]
window_s = {4}

[stopping.throughput]
params = ["micro_batch_size"]

[space]
micro_batch_size = [1, 2, 4, 8]
lr = [{5}]
)",
                                 dir.string(), trials, budget, budget / 27, budget / 5, lrs);
  std::ofstream(dir / "study.toml") << text;
  auto study = study::LoadStudy((dir / "study.toml").string());
  if (!study.ok()) Fail(study.status().ToString());
  auto db = store::Store::Open(study->database);
  if (!db.ok()) Fail(db.status().ToString());
  auto transport = slurm::NewLocalTransport();
  SystemClock clock;
  std::ostringstream log;
  run::Runner runner(*study, **db, *transport, clock, log);
  if (Status st = runner.Prepare(); !st.ok()) Fail(st.ToString() + "\n" + log.str());
  auto records = (*db)->ListTrials(runner.study_id());
  if (!records.ok()) Fail(records.status().ToString());
  std::ofstream jobs(dir / "jobs.txt");
  double now = clock.Now();
  int i = 0;
  for (store::TrialRecord& t : *records) {
    if (i == trials) break;
    int mbs = 1 << (i % 4);
    Generator gen{i, 0.4 / std::sqrt(static_cast<double>(mbs)), 2.0 + 0.002 * ((i / 4) % 25), std::mt19937_64(i)};
    std::vector<store::MetricRow> rows;
    rows.reserve(2 * static_cast<size_t>(stored));
    for (int k = 0; k < stored; ++k) {
      CurvePoint p = gen.Next();
      rows.push_back({p.step, p.time_s, "lm_loss", p.value});
      rows.push_back({p.step, p.time_s, "nan_iters", 0});
    }
    t.state = "running";
    t.job_id = std::to_string(700001 + i);
    t.log_path = (dir / "logs" / (t.trial_key + ".log")).string();
    t.submitted_at = now - 2 * gen.t;
    t.started_at = now - gen.t;
    std::ofstream(t.log_path).flush();
    Status st = (*db)->InTransaction([&]() -> Status {
      SWEEP_RETURN_IF_ERROR((*db)->UpdateTrial(t));
      return (*db)->AppendMetrics(t.id, rows, 0);
    });
    if (!st.ok()) Fail(st.ToString());
    jobs << fmt::format("{}|slurmsweep:study={}:trial={}:attempt={}|ss-{}-{}|{}\n", t.job_id, study->name, t.trial_key,
                        t.attempt, study->name, t.trial_key, t.log_path);
    ++i;
  }
  fmt::print("{}: {} running trials x {} points (lm_loss, nan_iters) in {}\n", (dir / "study.toml").string(), i, stored,
             study->database);
  return 0;
}

int Main(int argc, char** argv) {
  int trials = 1000, stored = 10000, fresh = 10, rounds = 5, repeats = 1;
  bool rebuild = true, per_view = false, check = false;
  std::string write_study;
  for (int k = 1; k < argc; ++k) {
    std::string a = argv[k];
    auto next = [&]() -> int {
      if (k + 1 >= argc) {
        fmt::print(stderr, "stopping_tick_bench: {} needs a value\n", a);
        std::exit(2);
      }
      return std::atoi(argv[++k]);
    };
    if (a == "--trials") trials = next();
    else if (a == "--stored") stored = next();
    else if (a == "--new") fresh = next();
    else if (a == "--rounds") rounds = next();
    else if (a == "--no-rebuild") rebuild = false;
    else if (a == "--repeats") repeats = std::max(1, next());
    else if (a == "--per-view") per_view = true;
    else if (a == "--check") check = true;
    else if (a == "--write-study" && k + 1 < argc) write_study = argv[++k];
    else {
      fmt::print(stderr,
                 "usage: stopping_tick_bench [--trials N] [--stored N] [--new N] [--rounds N] [--no-rebuild]\n"
                 "                           [--repeats N [--per-view]] [--check]\n"
                 "       stopping_tick_bench --write-study DIR [--trials N] [--stored N]\n");
      return a == "--help" ? 0 : 2;
    }
  }
  if (!write_study.empty()) return WriteStudy(write_study, trials, stored);
  std::vector<Generator> gens;
  std::vector<TrialProgress> meta;
  for (int i = 0; i < trials; ++i) {
    int config = i / repeats;  // without repeats, each trial its own configuration
    int mbs = 1 << (config % 4);
    double lr = 1e-4 * (1 + (config / 4) % 25);
    gens.push_back(
        {i, 0.4 / std::sqrt(static_cast<double>(mbs)), 2.0 + 0.002 * ((config / 4) % 25), std::mt19937_64(i)});
    TrialProgress p;
    p.id = i;
    p.name = fmt::format("t-{:04d}", i);
    p.gpus = 8;
    p.params = {{"micro_batch_size", std::to_string(mbs)}, {"lr", fmt::format("{:g}", lr)}};
    if (repeats > 1) p.configuration = fmt::format("c-{:04d}", config);
    meta.push_back(std::move(p));
  }
  // The study's budget: about the time the fastest trials reach after stored + rounds ticks of points.
  double budget = 10.0 * (stored + fresh * rounds) * 0.4 / 2;
  StoppingConfig config;
  config.budget_s = budget;
  config.target_loss = 2.05;
  config.divergence.enabled = true;
  config.divergence.max_nan_iters = 100;
  config.divergence.spike_factor = 3;
  config.race.enabled = true;
  config.halving.enabled = true;
  config.halving.min_time_s = budget / 27;
  config.median.enabled = true;
  config.patience.enabled = true;
  config.patience.window_s = budget / 5;
  config.throughput.enabled = true;
  config.throughput.params = {"micro_batch_size"};

  // The stored points: the old way's curves, and the state built from them as a restarted run does.
  std::vector<std::vector<CurvePoint>> curves(trials);
  for (int i = 0; i < trials; ++i) {
    curves[i].reserve(static_cast<size_t>(stored + fresh * rounds));
    for (int k = 0; k < stored; ++k) curves[i].push_back(gens[i].Next());
  }
  auto t0 = std::chrono::steady_clock::now();
  double c0 = CpuNow();
  StoppingState state(config);
  for (int i = 0; i < trials; ++i) state.Append(i, 8, curves[i], {});
  double build_s = Seconds(t0), build_cpu = CpuNow() - c0;
  // The first tick after a restart also settles what the series left for it (Series::Refresh).
  c0 = CpuNow();
  (void)state.Evaluate(meta);
  double first_tick_cpu = CpuNow() - c0;

  std::vector<double> inc_s, old_s, inc_wall, view_s, ref_s, append_s;  // CPU seconds; wall seconds
  size_t decisions_inc = 0, decisions_old = 0, decisions_view = 0, decisions_ref = 0, differing = 0;
  for (int r = 0; r < rounds; ++r) {
    std::vector<std::vector<CurvePoint>> news(trials);
    for (int i = 0; i < trials; ++i) {
      for (int k = 0; k < fresh; ++k) news[i].push_back(gens[i].Next());
      curves[i].insert(curves[i].end(), news[i].begin(), news[i].end());
    }
    t0 = std::chrono::steady_clock::now();
    c0 = CpuNow();
    for (int i = 0; i < trials; ++i) state.Append(i, 8, news[i], {});
    append_s.push_back(CpuNow() - c0);
    std::vector<stopping::StopDecision> got = state.Evaluate(meta);
    decisions_inc += got.size();
    inc_s.push_back(CpuNow() - c0);
    inc_wall.push_back(Seconds(t0));
    if (check) {
      // The same state, the rules pair by pair (RulePath::kReference): the same decisions, word for word.
      c0 = CpuNow();
      std::vector<stopping::StopDecision> ref = state.Evaluate(meta, stopping::RulePath::kReference);
      ref_s.push_back(CpuNow() - c0);
      decisions_ref += ref.size();
      for (size_t k = 0; k < std::max(got.size(), ref.size()); ++k) {
        bool same = k < got.size() && k < ref.size() && got[k].trial_id == ref[k].trial_id &&
                    got[k].rule == ref[k].rule && got[k].reason == ref[k].reason;
        differing += !same;
      }
    }
    if (per_view) {
      c0 = CpuNow();
      decisions_view += PerView(state, meta).size();
      view_s.push_back(CpuNow() - c0);
    }
    if (!rebuild) continue;
    c0 = CpuNow();
    std::vector<TrialProgress> progress = meta;  // as the run loop did: a copy of every curve
    for (int i = 0; i < trials; ++i) progress[i].loss = curves[i];
    decisions_old += EvaluateStopping(config, progress).size();
    old_s.push_back(CpuNow() - c0);
  }
  double inc = Median(inc_s);
  fmt::print(
      "stopping_tick_bench: {} running trials{}, {} stored + {} new points each per tick, all rules on; "
      "medians of {} ticks\n",
      trials, repeats > 1 ? fmt::format(" ({} repeats per configuration)", repeats) : "", stored, fresh, rounds);
  fmt::print("  CPU time of one tick:\n");
  fmt::print(
      "  incremental tick (StoppingState: append the new points, decide)   {:8.4f} s  ({} stops decided; wall {:.4f} "
      "s)\n",
      inc, decisions_inc / static_cast<size_t>(rounds), Median(inc_wall));
  fmt::print("    of which appending the new points (Series::AppendLoss)          {:8.4f} s\n", Median(append_s));
  if (rebuild) {
    double old = Median(old_s);
    fmt::print("  rebuilding tick (copy every curve, EvaluateStopping from scratch) {:8.4f} s  ({} stops decided)\n",
               old, decisions_old / static_cast<size_t>(rounds));
    fmt::print("  incremental / rebuilding: {:.3f}\n", inc / old);
  }
  if (check) {
    double ref = Median(ref_s);
    fmt::print("  reference tick (the same rules pair by pair, RulePath::kReference) {:8.4f} s  ({} stops decided)\n",
               ref, decisions_ref / static_cast<size_t>(rounds));
    fmt::print("  incremental / reference: {:.3f}; decisions that differ: {}\n", inc / ref, differing);
  }
  if (per_view) {
    fmt::print("  one evaluation per running trial, each without its siblings   {:8.4f} s  ({} stops decided)\n",
               Median(view_s), decisions_view / static_cast<size_t>(rounds));
  }
  fmt::print("  incremental tick / limit {} s: {:.2f}\n", kLimitS, inc / kLimitS);
  fmt::print(
      "  building the state from the stored points (a restart): {:.3f} s CPU (wall {:.3f} s); its first tick {:.3f} s "
      "CPU\n",
      build_cpu, build_s, first_tick_cpu);
  double curve_bytes = static_cast<double>(stored) * sizeof(CurvePoint);
  fmt::print("  memory per trial: incremental series {:.1f} KB; the stored curve as the run loop kept it {:.1f} KB\n",
             static_cast<double>(state.MemoryBytes()) / trials / 1024, curve_bytes / 1024);
  return differing == 0 ? 0 : 1;
}

}  // namespace
}  // namespace sweep

int main(int argc, char** argv) { return sweep::Main(argc, argv); }
