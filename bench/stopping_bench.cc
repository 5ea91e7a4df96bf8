// stopping_bench: replays real loss curves (bench/data, described in its SOURCE.md) as simulated
// sweeps under each stopping rule of stopping/early_stop.h, under none, and under Optuna's
// pruners (bench/optuna_pruners.py), and prints what each costs and loses. Not a test.
//
// A study is a sweep with a common training-time budget B: the longest time every one of its
// trials reached, so each trial's loss at B is measured, never extrapolated. Each trial runs
// until a rule stops it or its recorded run ends (as a Slurm sweep of fixed-length jobs does);
// rules keep deciding after B (a trial past B is judged on its loss at B). A rule's cost is the
// GPU-time it let trials run, over two references: exhaustive to B (every trial run to B, as if
// the sweep had a time limit of B per trial; stop times past B count as B) and no stopping (every
// trial to its recorded end). Its regret is the loss at B of the best trial it let reach B minus
// the loss at B of the best of all.
// Two ways to run a sweep: all trials at once (how a Slurm sweep runs, max_concurrent >= trials)
// and one after another (in several random orders, averaged).
//
// The same stop times are also scored for the time-to-target objective ([objective] rank_by =
// "time_to_target"): a study's target is the median over its trials of the smoothed loss at B (so
// about half of them reach it by B); a trial's time to target is when its smoothed loss (the
// rules' smoothing) first gets there. A rule keeps the best if the fastest trial ran until it got
// there; its time-to-target regret is how much longer the fastest trial that got there took.

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "stopping/early_stop.h"

namespace sweep {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

struct BenchTrial {
  std::string name;   // the Megatron-LM test case
  std::string model;  // what changes the loss per iteration (studies.csv); the rest is throughput
  int gpus = 8;
  std::vector<CurvePoint> curve;  // raw lm loss; time_s = training time since the first iteration
};

struct BenchStudy {
  std::string name;
  std::vector<BenchTrial> trials;
  double budget_s = 0;
  std::vector<double> end_s;       // per trial: training time at its last logged point
  std::vector<double> final_loss;  // raw loss at the budget (last point at or before it)
  double target = 0;               // time-to-target objective: median smoothed loss at the budget
  std::vector<double> ttt;         // per trial: time to target, infinity if not reached by the budget
  double best_ttt = 0;
};

Smoothing BenchSmoothing() { return {SmoothingKind::kEma, 0.3, 5}; }  // what every policy uses

std::vector<std::string> SplitCsv(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) out.push_back(cell);
  if (!line.empty() && line.back() == ',') out.emplace_back();
  return out;
}

// Rows of a CSV file (no quoting in our data) as column name -> value.
std::vector<std::map<std::string, std::string>> ReadCsv(const fs::path& path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "stopping_bench: cannot read " << path << "\n";
    std::exit(2);
  }
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header = SplitCsv(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> cells = SplitCsv(line);
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = i < cells.size() ? cells[i] : "";
    rows.push_back(std::move(row));
  }
  return rows;
}

// Loss against training time. Golden values log an iteration time at some steps only; like the
// run loop's parser, time starts at the first logged iteration, and a logged time stands for every
// step since the previous logged step. The first logged time includes start-up (2 to 19 s against
// 0.05 to 5 s per iteration), which the issue excludes from the axis and which in these 25- to
// 100-iteration runs would outweigh the training itself: it is replaced by the median.
std::vector<CurvePoint> BuildCurve(const std::vector<std::map<std::string, std::string>>& rows) {
  struct Row {
    int64_t step;
    std::optional<double> loss, iter_time;
  };
  std::vector<Row> r;
  for (const auto& row : rows) {
    Row x{std::stoll(row.at("step")), std::nullopt, std::nullopt};
    if (!row.at("lm_loss").empty()) x.loss = std::stod(row.at("lm_loss"));
    if (!row.at("iteration_time_s").empty()) x.iter_time = std::stod(row.at("iteration_time_s"));
    r.push_back(x);
  }
  std::sort(r.begin(), r.end(), [](const Row& a, const Row& b) { return a.step < b.step; });
  std::vector<double> times;
  for (const Row& x : r) {
    if (x.iter_time) times.push_back(*x.iter_time);
  }
  if (times.size() > 1) {
    std::vector<double> steady(times.begin() + 1, times.end());
    std::nth_element(steady.begin(), steady.begin() + steady.size() / 2, steady.end());
    for (Row& x : r) {
      if (x.iter_time) {
        x.iter_time = steady[steady.size() / 2];
        break;
      }
    }
  }
  std::vector<CurvePoint> out;
  double time = 0;
  for (size_t k = 0; k < r.size(); ++k) {
    if (k > 0) {
      // Steps without a logged time take the next logged one (the interval it averages over).
      std::optional<double> dt = r[k].iter_time;
      for (size_t j = k + 1; !dt && j < r.size(); ++j) dt = r[j].iter_time;
      for (size_t j = k; !dt && j-- > 1;) dt = r[j].iter_time;
      time += dt.value_or(0) * static_cast<double>(r[k].step - r[k - 1].step);
    }
    if (r[k].loss) out.push_back({r[k].step, time, *r[k].loss});
  }
  return out;
}

double LastAtOrBefore(const std::vector<CurvePoint>& curve, double t) {
  double v = curve.front().value;
  for (const CurvePoint& p : curve) {
    if (p.time_s > t) break;
    v = p.value;
  }
  return v;
}

std::vector<BenchStudy> LoadStudies(const fs::path& dir) {
  std::map<std::string, int> gpus;
  for (const auto& row : ReadCsv(dir / "cases.csv")) gpus[row.at("case")] = std::stoi(row.at("num_gpus"));
  std::map<std::string, std::vector<std::map<std::string, std::string>>> rows_by_case;
  // Megatron-LM's golden values, and our own workload's curves (bench/data/make_workload_curves.sh).
  for (const char* file : {"curves.csv", "workload_curves.csv"}) {
    for (auto& row : ReadCsv(dir / file)) rows_by_case[row.at("case")].push_back(std::move(row));
  }
  std::vector<BenchStudy> studies;
  for (const auto& row : ReadCsv(dir / "studies.csv")) {
    const std::string& name = row.at("study");
    auto it = std::find_if(studies.begin(), studies.end(), [&](const BenchStudy& s) { return s.name == name; });
    if (it == studies.end()) it = studies.insert(studies.end(), BenchStudy{name, {}, 0, {}});
    auto curve = rows_by_case.find(row.at("case"));
    if (curve == rows_by_case.end()) {
      std::cerr << "stopping_bench: no curve for " << row.at("case") << " in " << dir << "\n";
      std::exit(2);
    }
    auto g = gpus.find(row.at("case"));  // the workload runs on one CPU
    BenchTrial t{row.at("case"), row.at("model"), g == gpus.end() ? 1 : g->second, BuildCurve(curve->second)};
    it->trials.push_back(std::move(t));
  }
  for (BenchStudy& s : studies) {
    s.budget_s = std::numeric_limits<double>::infinity();
    for (const BenchTrial& t : s.trials) s.budget_s = std::min(s.budget_s, t.curve.back().time_s);
    for (const BenchTrial& t : s.trials) s.final_loss.push_back(LastAtOrBefore(t.curve, s.budget_s));
    for (const BenchTrial& t : s.trials) s.end_s.push_back(t.curve.back().time_s);
    std::vector<double> smoothed_final;
    std::vector<std::vector<CurvePoint>> prefixes;
    for (const BenchTrial& t : s.trials) {
      std::vector<CurvePoint> prefix;
      for (const CurvePoint& p : t.curve) {
        if (p.time_s <= s.budget_s) prefix.push_back(p);
      }
      smoothed_final.push_back(Smooth(prefix, BenchSmoothing()).back());
      prefixes.push_back(std::move(prefix));
    }
    std::vector<double> sorted = smoothed_final;
    std::sort(sorted.begin(), sorted.end());
    s.target = sorted[(sorted.size() - 1) / 2];
    s.best_ttt = std::numeric_limits<double>::infinity();
    for (const auto& prefix : prefixes) {
      s.ttt.push_back(
          TimeToTarget(prefix, s.target, BenchSmoothing()).value_or(std::numeric_limits<double>::infinity()));
      s.best_ttt = std::min(s.best_ttt, s.ttt.back());
    }
  }
  return studies;
}

// ---------------------------------------------------------------------------------------------
// Simulation

struct Policy {
  std::string name;
  std::function<StoppingConfig(double budget_s)> config;  // tuned relative to the budget, as a user would
};

std::vector<CurvePoint> Prefix(const std::vector<CurvePoint>& curve, double t) {
  std::vector<CurvePoint> out;
  for (const CurvePoint& p : curve) {
    if (p.time_s > t) break;
    out.push_back(p);
  }
  return out;
}

TrialProgress Progress(const BenchStudy& s, size_t i, TrialPhase phase, double until) {
  TrialProgress p;
  p.id = static_cast<int64_t>(i);
  p.phase = phase;
  p.gpus = s.trials[i].gpus;
  p.params = {{"model", s.trials[i].model}, {"config", s.trials[i].name}};
  p.loss = Prefix(s.trials[i].curve, until);
  return p;
}

// Points of trial i's curve logged by time t.
size_t Visible(const BenchStudy& s, size_t i, double t) {
  const auto& c = s.trials[i].curve;
  return std::upper_bound(c.begin(), c.end(), t, [](double v, const CurvePoint& p) { return v < p.time_s; }) -
         c.begin();
}

// Stop times (end_s[i] = ran to its end), all trials started together, decided every tick (B /
// ticks) until every trial has been stopped or has ended. The rules are stateless: a tick at
// which no curve grew and no trial changed phase decides as the one before, so it is skipped.
std::vector<double> AllAtOnce(const BenchStudy& s, const StoppingConfig& config, int ticks) {
  size_t n = s.trials.size();
  std::vector<double> stop = s.end_s;
  std::vector<bool> stopped(n, false);
  double horizon = *std::max_element(s.end_s.begin(), s.end_s.end());
  std::vector<size_t> seen;  // per trial: visible points, + phase
  for (int k = 1; config.AnyRule(); ++k) {
    double now = s.budget_s * k / ticks;
    if (now >= horizon) break;
    std::vector<size_t> state;
    for (size_t i = 0; i < n; ++i) {
      state.push_back(Visible(s, i, stopped[i] ? stop[i] : now) * 3 + (stopped[i] ? 1 : now >= s.end_s[i] ? 2 : 0));
    }
    if (state == seen) continue;
    seen = std::move(state);
    std::vector<TrialProgress> trials;
    for (size_t i = 0; i < n; ++i) {
      TrialPhase phase = stopped[i]          ? TrialPhase::kStopped
                         : now >= s.end_s[i] ? TrialPhase::kCompleted
                                             : TrialPhase::kRunning;
      trials.push_back(Progress(s, i, phase, stopped[i] ? stop[i] : now));
    }
    for (const StopDecision& d : EvaluateStopping(config, trials)) {
      stopped[d.trial_id] = true;
      stop[d.trial_id] = now;
    }
  }
  return stop;
}

// Stop times, trials run one at a time in `order`; earlier trials are evidence for later ones.
std::vector<double> OneAfterAnother(const BenchStudy& s, const StoppingConfig& config, const std::vector<size_t>& order,
                                    int ticks) {
  std::vector<double> stop = s.end_s;
  std::vector<TrialProgress> done;
  for (size_t i : order) {
    size_t seen = 0;  // points of trial i visible at the last decision (the done ones are fixed)
    for (int k = 1; config.AnyRule(); ++k) {
      double now = s.budget_s * k / ticks;
      if (now >= s.end_s[i]) break;
      size_t visible = Visible(s, i, now);
      if (visible == seen) continue;
      seen = visible;
      std::vector<TrialProgress> trials = done;
      trials.push_back(Progress(s, i, TrialPhase::kRunning, now));
      if (!EvaluateStopping(config, trials).empty()) {
        stop[i] = now;
        break;
      }
    }
    bool finished = stop[i] >= s.end_s[i];
    done.push_back(Progress(s, i, finished ? TrialPhase::kCompleted : TrialPhase::kStopped, stop[i]));
  }
  return stop;
}

struct Score {
  double cost = 0;       // GPU-time spent / exhaustive to the budget (stop times past it count as B)
  double cost_full = 0;  // GPU-time spent / no stopping (every trial to its recorded end)
  double gpu_hours = 0;
  double regret = 0;  // nats; infinity if nothing survived
  bool best_survived = false;
  int stopped = 0;
  double ttt_regret = 0;  // time to target of the fastest that got there / the fastest of all - 1
  bool ttt_best_kept = false;
};

Score ScoreRun(const BenchStudy& s, const std::vector<double>& stop) {
  Score sc;
  double spent = 0, exhaustive = 0, spent_full = 0, no_stopping = 0, best = std::numeric_limits<double>::infinity(),
         best_alive = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < s.trials.size(); ++i) {
    spent += std::min(stop[i], s.budget_s) * s.trials[i].gpus;
    exhaustive += s.budget_s * s.trials[i].gpus;
    spent_full += stop[i] * s.trials[i].gpus;
    no_stopping += s.end_s[i] * s.trials[i].gpus;
    best = std::min(best, s.final_loss[i]);
    if (stop[i] >= s.budget_s) best_alive = std::min(best_alive, s.final_loss[i]);
    else ++sc.stopped;
  }
  sc.cost = spent / exhaustive;
  sc.cost_full = spent_full / no_stopping;
  sc.gpu_hours = spent_full / 3600;
  sc.regret = best_alive - best;
  sc.best_survived = sc.regret <= 1e-9;
  double fastest = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < s.trials.size(); ++i) {
    if (stop[i] >= s.ttt[i]) fastest = std::min(fastest, s.ttt[i]);
  }
  sc.ttt_regret = fastest / s.best_ttt - 1;
  sc.ttt_best_kept = sc.ttt_regret <= 1e-9;
  return sc;
}

// One policy's results over the suite, for one way of running the sweep.
struct Summary {
  std::string name;
  std::vector<Score> per_study;  // sequential: averaged over the orders
  double mean_cost = 0, pooled_cost = 0, mean_cost_full = 0, mean_regret = 0, max_regret = 0, survived = 0;
  double mean_ttt_regret = 0, max_ttt_regret = 0, ttt_kept = 0;
};

Score Average(const std::vector<Score>& scores) {
  Score a;
  for (const Score& s : scores) {
    a.cost += s.cost / scores.size();
    a.cost_full += s.cost_full / scores.size();
    a.gpu_hours += s.gpu_hours / scores.size();
    a.regret += s.regret / scores.size();
    a.ttt_regret += s.ttt_regret / scores.size();
    a.best_survived = false;
    a.stopped += s.stopped;
  }
  a.stopped = static_cast<int>(std::lround(static_cast<double>(a.stopped) / scores.size()));
  return a;
}

Summary Summarize(std::string name, const std::vector<BenchStudy>& studies,
                  const std::vector<std::vector<Score>>& runs) {
  Summary m;
  m.name = std::move(name);
  double spent = 0, exhaustive = 0;
  int count = 0;
  for (size_t si = 0; si < studies.size(); ++si) {
    m.per_study.push_back(Average(runs[si]));
    for (const Score& sc : runs[si]) {
      m.survived += sc.best_survived;
      m.max_regret = std::max(m.max_regret, sc.regret);
      m.ttt_kept += sc.ttt_best_kept;
      m.max_ttt_regret = std::max(m.max_ttt_regret, sc.ttt_regret);
      ++count;
    }
    const BenchStudy& s = studies[si];
    double ex = 0;
    for (const BenchTrial& t : s.trials) ex += s.budget_s * t.gpus;
    spent += m.per_study.back().cost * ex;
    exhaustive += ex;
    m.mean_cost += m.per_study.back().cost / studies.size();
    m.mean_cost_full += m.per_study.back().cost_full / studies.size();
    m.mean_regret += m.per_study.back().regret / studies.size();
    m.mean_ttt_regret += m.per_study.back().ttt_regret / studies.size();
  }
  m.pooled_cost = spent / exhaustive;
  m.survived /= count;
  m.ttt_kept /= count;
  return m;
}

// ---------------------------------------------------------------------------------------------
// Policies

std::vector<Policy> Policies() {
  auto base = [](double) {
    StoppingConfig c;
    c.smoothing = BenchSmoothing();
    return c;
  };
  auto with = [base](auto edit) {
    return [base, edit](double b) {
      StoppingConfig c = base(b);
      c.budget_s = b;
      edit(c, b);
      return c;
    };
  };
  auto median = [](StoppingConfig& c, double b) {
    c.median.enabled = true;
    c.median.grace_s = b / 5;
    c.median.min_trials = 3;
  };
  auto halving = [](StoppingConfig& c, double b) {
    c.halving.enabled = true;
    c.halving.eta = 3;
    c.halving.min_time_s = b / 9;
    c.halving.min_trials = 3;
  };
  auto throughput = [](StoppingConfig& c, double b) {
    c.throughput.enabled = true;
    c.throughput.params = {"config"};
    c.throughput.grace_s = b / 50;
  };
  return {
      {"none", base},
      {"divergence", with([](StoppingConfig& c, double) {
         c.divergence.enabled = true;
         c.divergence.spike_factor = 10;
       })},
      {"patience", with([](StoppingConfig& c, double b) {
         c.patience.enabled = true;
         c.patience.window_s = b / 4;
         c.patience.grace_s = b / 10;
       })},
      {"median", with(median)},
      {"halving (rungs from B/27)", with([](StoppingConfig& c, double b) {
         c.halving.enabled = true;
         c.halving.min_time_s = b / 27;
       })},
      {"halving", with(halving)},
      {"throughput", with(throughput)},
      // How much each part and setting matters.
      {"throughput, siblings only", with([=](StoppingConfig& c, double b) {
         throughput(c, b);
         c.budget_s = 0;
         c.throughput.rival_speedup = 0;
         c.throughput.margin = std::numeric_limits<double>::infinity();
       })},
      {"throughput, grace B/10", with([=](StoppingConfig& c, double b) {
         throughput(c, b);
         c.throughput.grace_s = b / 10;
       })},
      {"throughput, rival_speedup 1.2", with([=](StoppingConfig& c, double b) {
         throughput(c, b);
         c.throughput.rival_speedup = 1.2;
       })},
      {"throughput, margin 0.05", with([=](StoppingConfig& c, double b) {
         throughput(c, b);
         c.throughput.margin = 0.05;
       })},
      {"throughput, no smoothing", with([=](StoppingConfig& c, double b) {
         throughput(c, b);
         c.smoothing.kind = SmoothingKind::kNone;
       })},
      {"throughput+median", with([=](StoppingConfig& c, double b) { throughput(c, b), median(c, b); })},
      // For the time-to-target objective (Main sets each study's target_loss).
      {"race", with([](StoppingConfig& c, double) { c.race.enabled = true; })},
      {"throughput+race", with([=](StoppingConfig& c, double b) {
         throughput(c, b);
         c.race.enabled = true;
       })},
      {"throughput+halving", with([=](StoppingConfig& c, double b) { throughput(c, b), halving(c, b); })},
  };
}

// ---------------------------------------------------------------------------------------------
// Optuna

// Time buckets of B / n that trial i runs until its recorded end: n for those that end at B.
int Buckets(const BenchStudy& s, size_t i, int n) {
  return std::max(n, static_cast<int>(std::ceil(s.end_s[i] / (s.budget_s / n) - 1e-9)));
}

// Writes the curves as Optuna would see them (the latest raw loss at each bucket's end, as a
// user's training loop reports it), runs bench/optuna_pruners.py, and returns its JSON.
std::optional<json> RunOptuna(const std::vector<BenchStudy>& studies,
                              const std::vector<std::vector<std::vector<size_t>>>& orders, int buckets,
                              const std::string& python, const fs::path& script) {
  json in;
  in["buckets"] = buckets;
  for (size_t si = 0; si < studies.size(); ++si) {
    const BenchStudy& s = studies[si];
    json js;
    js["name"] = s.name;
    for (const BenchTrial& t : s.trials) {
      std::vector<double> values;
      size_t i = &t - s.trials.data();
      for (int k = 1; k <= Buckets(s, i, buckets); ++k)
        values.push_back(LastAtOrBefore(t.curve, s.budget_s * k / buckets));
      js["budget_bucket"] = buckets;  // the objective: the loss at the end of this bucket (the budget)
      js["trials"].push_back({{"name", t.name}, {"values", values}});
    }
    js["orders"] = orders[si];
    in["studies"].push_back(js);
  }
  fs::path tmp = fs::temp_directory_path() / fmt::format("stopping_bench-{:x}", std::random_device{}());
  fs::create_directories(tmp);
  std::ofstream(tmp / "in.json") << in.dump();
  std::string cmd = fmt::format("'{}' '{}' '{}' > '{}'", python, script.string(), (tmp / "in.json").string(),
                                (tmp / "out.json").string());
  int rc = std::system(cmd.c_str());
  std::optional<json> out;
  if (rc == 0) {
    std::ifstream f(tmp / "out.json");
    out = json::parse(f, nullptr, false);
    if (out->is_discarded()) out.reset();
  }
  fs::remove_all(tmp);
  if (!out) std::cerr << "stopping_bench: " << cmd << " failed (wait status " << rc << "); Optuna columns left out\n";
  return out;
}

void PrintTable(const std::string& title, const std::vector<Summary>& rows, const std::vector<BenchStudy>& studies,
                bool per_study) {
  fmt::print("\n{}\n", title);
  fmt::print("{:<46} {:>8} {:>8} {:>8} {:>8} {:>9} {:>11} {:>10}", "rule", "GPU-time", "(pooled)", "to ends", "GPU-h",
             "best kept", "mean regret", "max regret");
  if (per_study) {
    for (const BenchStudy& s : studies) fmt::print(" | {:>16}", s.name);
  }
  fmt::print("\n");
  for (const Summary& m : rows) {
    double hours = 0;
    for (const Score& sc : m.per_study) hours += sc.gpu_hours;
    fmt::print("{:<46} {:>8.3f} {:>8.3f} {:>8.3f} {:>8.2f} {:>8.0f}% {:>11.4f} {:>10.4f}", m.name, m.mean_cost,
               m.pooled_cost, m.mean_cost_full, hours, 100 * m.survived, m.mean_regret, m.max_regret);
    if (per_study) {
      for (const Score& sc : m.per_study) fmt::print(" | {:>7.3f} {:>8.4f}", sc.cost, sc.regret);
    }
    fmt::print("\n");
  }
}

// The same runs scored for the time-to-target objective.
void PrintTimeToTarget(const std::string& title, const std::vector<Summary>& rows,
                       const std::vector<BenchStudy>& studies) {
  fmt::print("\n{}\n", title);
  fmt::print("{:<46} {:>8} {:>9} {:>11} {:>10}", "rule", "GPU-time", "best kept", "mean regret", "max regret");
  for (const BenchStudy& s : studies) fmt::print(" | {:>16}", s.name);
  fmt::print("\n");
  auto pct = [](double r) { return std::isfinite(r) ? fmt::format("{:.2f}%", 100 * r) : std::string("lost"); };
  for (const Summary& m : rows) {
    fmt::print("{:<46} {:>8.3f} {:>8.0f}% {:>11} {:>10}", m.name, m.mean_cost, 100 * m.ttt_kept, pct(m.mean_ttt_regret),
               pct(m.max_ttt_regret));
    for (const Score& sc : m.per_study) fmt::print(" | {:>7.3f} {:>8}", sc.cost, pct(sc.ttt_regret));
    fmt::print("\n");
  }
}

int Main(int argc, char** argv) {
  fs::path source = SLURMSWEEP_SOURCE_DIR;
  fs::path data = source / "bench/data";
  std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  int ticks = 100, n_orders = 10;
  bool optuna = true, verbose = false;
  std::string headline = "throughput";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::cerr << "stopping_bench: " << a << " needs a value\n";
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--data") data = next();
    else if (a == "--python") python = next();
    else if (a == "--ticks") ticks = std::stoi(next());
    else if (a == "--orders") n_orders = std::stoi(next());
    else if (a == "--headline") headline = next();
    else if (a == "--no-optuna") optuna = false;
    else if (a == "--verbose") verbose = true;
    else {
      std::cerr << "usage: stopping_bench [--data DIR] [--python PATH] [--no-optuna] [--ticks N] [--orders N]\n"
                   "                      [--headline RULE] [--verbose]\n";
      return a == "--help" ? 0 : 2;
    }
  }

  std::vector<BenchStudy> studies = LoadStudies(data);
  std::mt19937_64 rng(20240903);
  std::vector<std::vector<std::vector<size_t>>> orders;
  fmt::print("stopping_bench: {} studies from {}, {} ticks per budget, {} random orders one after another\n",
             studies.size(), data.string(), ticks, n_orders);
  for (const BenchStudy& s : studies) {
    size_t best = std::min_element(s.final_loss.begin(), s.final_loss.end()) - s.final_loss.begin();
    std::map<std::string, int> models;
    for (const BenchTrial& t : s.trials) ++models[t.model];
    size_t fastest = std::min_element(s.ttt.begin(), s.ttt.end()) - s.ttt.begin();
    fmt::print("  {:<18} {:>2} trials, {:>2} models, budget {:>7.2f}s x {} GPUs; best at budget {:.4f} ({})\n", s.name,
               s.trials.size(), models.size(), s.budget_s, s.trials.front().gpus, s.final_loss[best],
               s.trials[best].name);
    fmt::print("  {:<18} target {:.4f} (median smoothed loss at budget): {} trials reach it, first at {:.3g}s ({})\n",
               "", s.target, std::count_if(s.ttt.begin(), s.ttt.end(), [](double t) { return std::isfinite(t); }),
               s.best_ttt, s.trials[fastest].name);
    std::vector<std::vector<size_t>> o;
    for (int k = 0; k < n_orders; ++k) {
      std::vector<size_t> order(s.trials.size());
      for (size_t i = 0; i < order.size(); ++i) order[i] = i;
      std::shuffle(order.begin(), order.end(), rng);
      o.push_back(order);
    }
    orders.push_back(o);
  }

  std::vector<Summary> together, sequential;
  for (const Policy& p : Policies()) {
    std::vector<std::vector<Score>> all(studies.size()), seq(studies.size());
    for (size_t si = 0; si < studies.size(); ++si) {
      const BenchStudy& s = studies[si];
      StoppingConfig config = p.config(s.budget_s);
      config.target_loss = s.target;
      std::vector<double> stop = AllAtOnce(s, config, ticks);
      all[si].push_back(ScoreRun(s, stop));
      if (verbose) {
        for (size_t i = 0; i < s.trials.size(); ++i) {
          const std::vector<CurvePoint>& c = s.trials[i].curve;
          double rate = c.size() > 1 ? (c.back().step - c.front().step) / (c.back().time_s - c.front().time_s) : 0;
          if (stop[i] < s.end_s[i]) {
            fmt::print("  [{} {}] stopped {} at {:.3g}s of {:.3g}s (loss at budget {:.4f}, {:.4g} it/s)\n", p.name,
                       s.name, s.trials[i].name, stop[i], s.end_s[i], s.final_loss[i], rate);
          } else {
            fmt::print("  [{} {}] kept {} (loss at budget {:.4f}, {:.4g} it/s)\n", p.name, s.name, s.trials[i].name,
                       s.final_loss[i], rate);
          }
        }
      }
      for (const auto& order : orders[si]) seq[si].push_back(ScoreRun(s, OneAfterAnother(s, config, order, ticks)));
    }
    together.push_back(Summarize(p.name, studies, all));
    sequential.push_back(Summarize(p.name, studies, seq));
  }

  {
    // The floor for any rule that keeps the best trial: only the best runs, the rest cost nothing.
    std::vector<std::vector<Score>> oracle(studies.size());
    for (size_t si = 0; si < studies.size(); ++si) {
      const BenchStudy& s = studies[si];
      size_t best = std::min_element(s.final_loss.begin(), s.final_loss.end()) - s.final_loss.begin();
      std::vector<double> stop(s.trials.size(), 0);
      stop[best] = s.end_s[best];
      oracle[si].push_back(ScoreRun(s, stop));
    }
    together.insert(together.begin() + 1, Summarize("(oracle: only the best runs)", studies, oracle));
    sequential.insert(sequential.begin() + 1, Summarize("(oracle: only the best runs)", studies, oracle));
  }

  if (optuna) {
    if (auto out = RunOptuna(studies, orders, ticks, python, source / "bench/optuna_pruners.py")) {
      for (const json& pr : (*out)["pruners"]) {
        std::vector<std::vector<Score>> all(studies.size()), seq(studies.size());
        for (size_t si = 0; si < studies.size(); ++si) {
          const BenchStudy& s = studies[si];
          auto to_times = [&](const json& buckets) {
            std::vector<double> stop;
            for (const json& b : buckets) {
              size_t i = stop.size();
              int k = b.get<int>();
              stop.push_back(k >= Buckets(s, i, ticks) ? s.end_s[i] : s.budget_s * k / ticks);
            }
            return stop;
          };
          all[si].push_back(ScoreRun(s, to_times(pr["all_at_once"][s.name])));
          for (const json& run : pr["sequential"][s.name]) seq[si].push_back(ScoreRun(s, to_times(run)));
        }
        std::string name = "optuna " + pr["name"].get<std::string>();
        together.push_back(Summarize(name, studies, all));
        sequential.push_back(Summarize(name, studies, seq));
      }
    }
  }

  fmt::print(
      "\nGPU-time: spent up to the budget / exhaustive (every trial to the budget), mean over studies;\n"
      "(pooled): summed over studies first; to ends: spent / no stopping (every trial to its recorded end),\n"
      "mean over studies; GPU-h: spent. best kept: runs in which the best trial at the budget reached it.\n"
      "regret: loss at the budget of the best trial that reached it minus the best of all (nats). Per\n"
      "study: GPU-time and regret. Optuna is given the latest raw loss at the end of each time bucket (B/{},\n"
      "its steps) until the trial's end; our rules are evaluated at the same instants.\n",
      ticks);
  PrintTable("All trials at once:", together, studies, true);
  PrintTable(fmt::format("One after another ({} random orders per study):", n_orders), sequential, studies, true);
  fmt::print(
      "\nTime-to-target objective, the same runs: best kept = the trial fastest to the target ran until it got\n"
      "there; regret = how much longer the fastest trial that got there took (relative; 'lost': none got\n"
      "there). race and throughput+race are given each study's target as [stopping] target_loss.\n");
  PrintTimeToTarget("All trials at once, time to target:", together, studies);
  PrintTimeToTarget(fmt::format("One after another ({} random orders per study), time to target:", n_orders),
                    sequential, studies);

  auto find = [](const std::vector<Summary>& rows, const std::string& name) -> const Summary* {
    for (const Summary& m : rows) {
      if (m.name == name) return &m;
    }
    return nullptr;
  };
  for (auto [title, rows] : {std::pair{"all at once", &together}, std::pair{"one after another", &sequential}}) {
    const Summary* ours = find(*rows, headline);
    if (!ours) continue;
    fmt::print(
        "\n{} vs Optuna, {} (GPU-time ratio ours/theirs, to the budget and to the runs' ends; regret ours - "
        "theirs; better on both axes?):\n",
        headline, title);
    for (const Summary& m : *rows) {
      if (m.name.rfind("optuna ", 0) != 0) continue;
      bool both = ours->mean_cost <= m.mean_cost && ours->mean_cost_full <= m.mean_cost_full &&
                  ours->mean_regret <= m.mean_regret;
      fmt::print("  {:<44} {:>6.2f}x {:>6.2f}x {:>+9.4f}  {}\n", m.name, ours->mean_cost / m.mean_cost,
                 ours->mean_cost_full / m.mean_cost_full, ours->mean_regret - m.mean_regret, both ? "yes" : "no");
    }
  }
  for (auto [title, rows] : {std::pair{"all at once", &together}, std::pair{"one after another", &sequential}}) {
    const Summary* ours = find(*rows, "throughput+race");
    if (!ours) continue;
    fmt::print(
        "\nthroughput+race vs Optuna, {}, time to target (GPU-time ratio; best kept ours/theirs; mean "
        "regret ours/theirs):\n",
        title);
    for (const Summary& m : *rows) {
      if (m.name.rfind("optuna ", 0) != 0) continue;
      auto pct = [](double r) { return std::isfinite(r) ? fmt::format("{:.2f}%", 100 * r) : std::string("lost"); };
      fmt::print("  {:<44} {:>6.2f}x {:>5.0f}%/{:.0f}% {:>7}/{}\n", m.name, ours->mean_cost / m.mean_cost,
                 100 * ours->ttt_kept, 100 * m.ttt_kept, pct(ours->mean_ttt_regret), pct(m.mean_ttt_regret));
    }
  }
  if (const Summary* ours = find(together, headline)) {
    // A study of n trials cannot cost less than 1/n if its best trial is to finish, so the target
    // is also checked on the studies large enough for 0.25 to be within reach.
    double cost = 0, regret = 0;
    int large = 0;
    for (size_t si = 0; si < studies.size(); ++si) {
      if (studies[si].trials.size() < 5) continue;
      cost += ours->per_study[si].cost;
      regret += ours->per_study[si].regret;
      ++large;
    }
    auto verdict = [](double c, double r) { return c <= 0.25 && r <= 0.01 ? "met" : "NOT met"; };
    fmt::print("\nTarget (issue 6), {} all at once: GPU-time <= 0.25 and mean regret <= 0.01:\n", headline);
    fmt::print(
        "  against no stopping (every run to its recorded end), all {} studies: {:<7} (GPU-time {:.3f}, "
        "mean regret {:.4f})\n",
        studies.size(), verdict(ours->mean_cost_full, ours->mean_regret), ours->mean_cost_full, ours->mean_regret);
    std::vector<std::string> per;
    for (size_t si = 0; si < studies.size(); ++si) {
      per.push_back(fmt::format("{} {:.3f}", studies[si].name, ours->per_study[si].cost_full));
    }
    fmt::print("    per study: {}\n", fmt::join(per, ", "));
    fmt::print(
        "  against exhaustive to the budget, all {} studies:                {:<7} (GPU-time {:.3f}, mean regret "
        "{:.4f})\n",
        studies.size(), verdict(ours->mean_cost, ours->mean_regret), ours->mean_cost, ours->mean_regret);
    if (large > 0) {
      cost /= large, regret /= large;
      fmt::print(
          "  against exhaustive to the budget, {} studies of 5+ trials:        {:<7} (GPU-time {:.3f}, mean "
          "regret {:.4f})\n",
          large, verdict(cost, regret), cost, regret);
    }
  }
  return 0;
}

}  // namespace
}  // namespace sweep

int main(int argc, char** argv) { return sweep::Main(argc, argv); }
