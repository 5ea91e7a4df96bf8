// search_bench: the TPE sampler (sampler/tpe.h) against random search and Optuna 3.1's
// TPESampler (Debian's python3-optuna: its defaults, and multivariate=True, constant_liar=True),
// side by side in one run with the same budgets, batch sizes and seeds, on standard test
// functions and on recorded real results used as lookup tables. Prints the median simple regret
// after the budget, and the time to propose one trial with 1000 in the study against 20 ms.
// Optuna runs in one python3 process (bench/search_bench_optuna.py) that asks for trials on
// stdout and is told their values on stdin: every objective is evaluated here, once.
#include <fmt/format.h>

#include <algorithm>
#include <boost/process.hpp>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "sampler/tpe.h"

namespace fs = std::filesystem;
namespace bp = boost::process;
using sweep::sampler::Dimension;
using sweep::sampler::Point;

namespace {

struct Problem {
  std::string name;
  std::string unit;  // of the regret
  std::vector<Dimension> space;
  // The objective (lower is better); nullopt: not a configuration that can run (unrecorded).
  std::function<std::optional<double>(const Point&)> f;
  double optimum = 0;
  std::string source;
  bool table = false;  // recorded results: unrecorded configurations cannot run
};

Dimension Float(std::string name, double lo, double hi, bool log = false) {
  Dimension d;
  d.name = std::move(name);
  d.lo = lo;
  d.hi = hi;
  d.log = log;
  return d;
}
Dimension Int(std::string name, double lo, double hi) {
  Dimension d = Float(std::move(name), lo, hi);
  d.kind = Dimension::Kind::kInt;
  return d;
}
Dimension Cat(std::string name, int choices) {
  Dimension d;
  d.name = std::move(name);
  d.kind = Dimension::Kind::kCategorical;
  d.choices = choices;
  return d;
}

Problem Branin() {
  Problem p{"branin", "", {Float("x1", -5, 10), Float("x2", 0, 15)}, nullptr, 0.397887357729739, "Branin (2-D)"};
  p.f = [](const Point& x) -> std::optional<double> {
    double a = 1, b = 5.1 / (4 * M_PI * M_PI), c = 5 / M_PI, r = 6, s = 10, t = 1 / (8 * M_PI);
    return a * std::pow(x[1] - b * x[0] * x[0] + c * x[0] - r, 2) + s * (1 - t) * std::cos(x[0]) + s;
  };
  return p;
}

Problem Hartmann6() {
  Problem p{"hartmann6", "", {}, nullptr, -3.32236801141551, "Hartmann-6 (6-D)"};
  for (int i = 1; i <= 6; ++i) p.space.push_back(Float(fmt::format("x{}", i), 0, 1));
  p.f = [](const Point& x) -> std::optional<double> {
    static const double alpha[4] = {1.0, 1.2, 3.0, 3.2};
    static const double A[4][6] = {
        {10, 3, 17, 3.5, 1.7, 8}, {0.05, 10, 17, 0.1, 8, 14}, {3, 3.5, 1.7, 10, 17, 8}, {17, 8, 0.05, 10, 0.1, 14}};
    static const double P[4][6] = {{1312, 1696, 5569, 124, 8283, 5886},
                                   {2329, 4135, 8307, 3736, 1004, 9991},
                                   {2348, 1451, 3522, 2883, 3047, 6650},
                                   {4047, 8828, 8732, 5743, 1091, 381}};
    double sum = 0;
    for (int i = 0; i < 4; ++i) {
      double inner = 0;
      for (int j = 0; j < 6; ++j) inner += A[i][j] * std::pow(x[j] - P[i][j] * 1e-4, 2);
      sum += alpha[i] * std::exp(-inner);
    }
    return -sum;
  };
  return p;
}

// A tuning problem's shape: each optimizer has its own best learning rate; weight decay, depth
// and activation add smaller effects. Minimum 0 at adamw, lr 10^-3.3, wd 10^-3.5, 6 layers, gelu.
Problem Mixed() {
  Problem p{"mixed",
            "",
            {Cat("optimizer", 4), Float("lr", 1e-5, 1, true), Float("wd", 1e-6, 0.1, true), Int("layers", 1, 8),
             Cat("activation", 3)},
            nullptr,
            0,
            "4 optimizers x log lr x log wd x int layers x 3 activations"};
  p.f = [](const Point& x) -> std::optional<double> {
    static const double base[4] = {0.6, 0.3, 0.1, 0}, best_lr[4] = {-1, -1.7, -3, -3.3}, act[3] = {0.15, 0, 0.3};
    int o = static_cast<int>(x[0]);
    double lr = std::log10(x[1]) - best_lr[o], wd = std::log10(x[2]) + 3.5;
    return base[o] + 0.25 * lr * lr + 0.04 * wd * wd + 0.02 * std::pow(x[3] - 6, 2) + act[static_cast<int>(x[4])];
  };
  return p;
}

std::vector<std::map<std::string, std::string>> ReadCsv(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path.string());
  auto split = [](const std::string& line) {
    std::vector<std::string> out;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) out.push_back(cell);
    if (!line.empty() && line.back() == ',') out.push_back("");
    return out;
  };
  std::string line;
  std::getline(in, line);
  auto header = split(line);
  std::vector<std::map<std::string, std::string>> rows;
  while (std::getline(in, line)) {
    auto cells = split(line);
    std::map<std::string, std::string> row;
    for (size_t i = 0; i < header.size(); ++i) row[header[i]] = i < cells.size() ? cells[i] : "";
    rows.push_back(std::move(row));
  }
  return rows;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A table of recorded results over categorical knobs: unrecorded combinations cannot run.
Problem Table(std::string name, std::string unit, std::string source,
              const std::vector<std::pair<std::string, std::vector<std::string>>>& knobs,
              const std::map<std::vector<std::string>, double>& values) {
  Problem p{std::move(name), std::move(unit), {}, nullptr, 0, std::move(source), true};
  for (const auto& [k, choices] : knobs) p.space.push_back(Cat(k, static_cast<int>(choices.size())));
  auto table = std::make_shared<std::map<Point, double>>();
  for (const auto& [key, v] : values) {
    Point x;
    for (size_t j = 0; j < key.size(); ++j) {
      const auto& c = knobs[j].second;
      x.push_back(static_cast<double>(std::find(c.begin(), c.end(), key[j]) - c.begin()));
    }
    (*table)[x] = v;
  }
  p.optimum =
      std::min_element(values.begin(), values.end(), [](auto& a, auto& b) { return a.second < b.second; })->second;
  p.f = [table](const Point& x) -> std::optional<double> {
    auto it = table->find(x);
    if (it == table->end()) return std::nullopt;
    return it->second;
  };
  p.source += fmt::format(", {} of {} combinations recorded", values.size(), [&] {
    size_t n = 1;
    for (const auto& k : knobs) n *= k.second.size();
    return n;
  }());
  return p;
}

// Our workload's grid (bench/data/workload_curves.csv): final training loss by optimizer, learning
// rate, hidden width and micro-batch size.
Problem Workload(const fs::path& data) {
  std::map<std::string, double> last;
  std::map<std::string, int64_t> last_step;
  for (const auto& r : ReadCsv(data / "workload_curves.csv")) {
    int64_t step = std::stoll(r.at("step"));
    if (!last_step.count(r.at("case")) || step > last_step[r.at("case")]) {
      last_step[r.at("case")] = step;
      last[r.at("case")] = std::stod(r.at("lm_loss"));
    }
  }
  std::map<std::vector<std::string>, double> values;
  for (const auto& [c, loss] : last) {  // mlp_adam_lr0.003_h128_mbs16
    std::vector<std::string> parts;
    std::stringstream ss(c);
    std::string part;
    while (std::getline(ss, part, '_')) parts.push_back(part);
    values[{parts[1], parts[2].substr(2), parts[3].substr(1), parts[4].substr(3)}] = loss;
  }
  return Table("mlp_loss", "nats", "bench/data/workload_curves.csv: final loss of our MLP workload",
               {{"optimizer", {"sgd", "momentum", "adam"}},
                {"lr", {"0.003", "0.01", "0.03", "0.1"}},
                {"hidden", {"32", "128"}},
                {"mbs", {"16", "64"}}},
               values);
}

// Recorded Megatron-LM H100 runs of the 12-layer GPT (bench/data/cases.csv, curves.csv): the
// median iteration time (ms; lower is higher throughput) by parallel layout and memory knobs.
// Cases that share every knob (they differ in features such as rope or swiglu) count by their median.
Problem Megatron(const fs::path& data) {
  std::map<std::string, std::vector<double>> times;
  for (const auto& r : ReadCsv(data / "curves.csv")) {
    if (!r.at("iteration_time_s").empty() && r.at("step") != "1")
      times[r.at("case")].push_back(std::stod(r.at("iteration_time_s")) * 1000);
  }
  std::map<std::vector<std::string>, std::vector<double>> by_knobs;
  for (const auto& r : ReadCsv(data / "cases.csv")) {
    if (r.at("num_layers") != "12" || r.at("hidden_size") != "512" || r.at("global_batch_size") != "32") continue;
    if (r.at("precision") != "bf16" || times[r.at("case")].size() < 3) continue;
    std::string vp = r.at("vp").empty() ? "1" : r.at("vp");
    std::string rc = r.at("recompute_granularity").empty() ? "none" : r.at("recompute_granularity");
    by_knobs[{r.at("tp"), r.at("pp"), r.at("cp"), vp, rc, r.at("use_distributed_optimizer")}].push_back(
        Median(times[r.at("case")]));
  }
  std::map<std::vector<std::string>, double> values;
  for (const auto& [k, v] : by_knobs) values[k] = Median(v);
  return Table("megatron_iter_ms", "ms",
               "bench/data/cases.csv + curves.csv: median iteration time of recorded Megatron-LM H100 runs",
               {{"tp", {"1", "2", "4"}},
                {"pp", {"1", "2", "4"}},
                {"cp", {"1", "2"}},
                {"vp", {"1", "3"}},
                {"recompute", {"none", "full"}},
                {"dist_opt", {"true", "false"}}},
               values);
}

// One run: the best value after each counted evaluation (infeasible asks do not count).
using Trace = std::vector<double>;

void Record(Trace& trace, double v) { trace.push_back(trace.empty() ? v : std::min(trace.back(), v)); }

sweep::sampler::Options tpe_options;  // --candidates, --startup, --width, --prior-width, --independent: tuning

Trace RunTpe(const Problem& p, int budget, int batch, uint64_t seed) {
  std::vector<sweep::sampler::Observation> history;
  sweep::sampler::Options options = tpe_options;
  options.seed = seed;
  Trace trace;
  auto feasible = [&](const Point& x) { return p.f(x).has_value(); };
  while (static_cast<int>(trace.size()) < budget) {
    int k = std::min(batch, budget - static_cast<int>(trace.size()));
    auto xs = sweep::sampler::Propose(p.space, history, k, options, feasible);
    if (xs.empty()) break;
    for (const auto& x : xs) {
      double v = *p.f(x);
      history.push_back({x, sweep::sampler::Outcome::kComplete, v, 0});
      Record(trace, v);
    }
  }
  return trace;
}

// Distinct uniform draws that can run, as `sampler = "random"` makes them.
Trace RunRandom(const Problem& p, int budget, uint64_t seed) {
  uint64_t rng = seed * 0x2545f4914f6cdd1dULL + 17;
  std::set<Point> seen;
  Trace trace;
  for (int tries = 0; static_cast<int>(trace.size()) < budget && tries < budget * 1000; ++tries) {
    Point x = sweep::sampler::RandomPoint(p.space, rng);
    auto v = p.f(x);
    if (!v || !seen.insert(x).second) continue;
    Record(trace, *v);
  }
  return trace;
}

class Optuna {
 public:
  Optuna(const std::string& python, const fs::path& script)
      : child_(python, script.string(), bp::std_out > out_, bp::std_in < in_) {}
  ~Optuna() {
    in_ << "{\"quit\": true}" << std::endl;
    child_.wait();
  }

  Trace Run(const Problem& p, const std::string& variant, int budget, int batch, uint64_t seed) {
    nlohmann::json space = nlohmann::json::array();
    for (const auto& d : p.space) {
      const char* kind = d.kind == Dimension::Kind::kFloat ? "float" : d.kind == Dimension::Kind::kInt ? "int" : "cat";
      space.push_back(
          {{"name", d.name}, {"kind", kind}, {"lo", d.lo}, {"hi", d.hi}, {"log", d.log}, {"choices", d.choices}});
    }
    nlohmann::json run = {{"space", space}, {"variant", variant}, {"seed", seed}};
    in_ << run.dump() << std::endl;
    Trace trace;
    for (;;) {
      int k = std::min(batch, budget - static_cast<int>(trace.size()));
      in_ << nlohmann::json{{"ask", k}}.dump() << std::endl;
      std::string line;
      if (!std::getline(out_, line)) throw std::runtime_error("search_bench_optuna.py ended early");
      auto asked = nlohmann::json::parse(line);
      nlohmann::json values = nlohmann::json::array();
      for (const auto& params : asked) {
        Point x = params.get<Point>();
        auto v = p.f(x);
        values.push_back(v ? nlohmann::json(*v) : nlohmann::json(nullptr));
        // Optuna cannot rule such a configuration out before it runs: the failed job costs a trial.
        Record(trace, v.value_or(INFINITY));
      }
      in_ << nlohmann::json{{"tell", values}}.dump() << std::endl;
      if (static_cast<int>(trace.size()) >= budget) break;
    }
    in_ << "{\"end\": true}" << std::endl;
    return trace;
  }

 private:
  bp::ipstream out_;
  bp::opstream in_;
  bp::child child_;
};

// Seconds per proposal with `n` trials ended in the study (random points, random values).
double ProposeSeconds(const Problem& p, int n, int repeats) {
  uint64_t rng = 99;
  std::vector<sweep::sampler::Observation> history;
  for (int i = 0; i < n; ++i) {
    Point x = sweep::sampler::RandomPoint(p.space, rng);
    history.push_back({x, sweep::sampler::Outcome::kComplete, p.f(x).value_or(0), 0});
  }
  sweep::sampler::Options options;
  auto start = std::chrono::steady_clock::now();
  for (int r = 0; r < repeats; ++r) {
    options.seed = r + 1;
    auto xs = sweep::sampler::Propose(p.space, history, 1, options, nullptr);
    if (xs.empty()) throw std::runtime_error("no proposal");
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / repeats;
}

// --warm: what a warm start's first batch takes from the prior study, on the problem of the
// warm-start test in tests/tpe_runner_test.cc (x, y in [0, 1] with x + y <= 1.2, optimizer sgd or
// adam; loss (x - 0.3)^2 + (y - 0.6)^2, plus 0.5 with sgd). Per seed: a prior study of 14 trials
// in batches of 4, then a warm study's first batch of 4 from it. Then both a warm and a cold
// study run 14 trials on the same problem moved by 0.1 in x and -0.1 in y (the hardware changed).
void WarmBench(int seeds) {
  std::vector<Dimension> space = {Float("x", 0, 1), Float("y", 0, 1), Cat("opt", 2)};
  auto feasible = [](const Point& p) { return p[0] + p[1] <= 1.2; };
  auto loss = [](const Point& p, double shift) {
    return std::pow(p[0] - 0.3 - shift, 2) + std::pow(p[1] - 0.6 + shift, 2) + (p[2] == 1 ? 0 : 0.5);
  };
  using sweep::sampler::Observation;
  using sweep::sampler::Outcome;
  auto run = [&](std::vector<Observation> history, uint64_t seed, double shift, int n, std::vector<Point>* first) {
    sweep::sampler::Options options = tpe_options;
    options.seed = seed;
    double best = INFINITY;
    for (int done = 0; done < n;) {
      auto xs = sweep::sampler::Propose(space, history, std::min(4, n - done), options, feasible);
      if (first && first->empty()) *first = xs;
      for (const auto& x : xs) {
        double v = loss(x, shift);
        history.push_back({x, Outcome::kComplete, v, 0});
        best = std::min(best, v);
        ++done;
      }
    }
    return std::make_pair(history, best);
  };
  double best_choice = 0, first_distance = 0;
  std::vector<double> warm_best, cold_best;
  for (int s = 1; s <= seeds; ++s) {
    auto prior = run({}, s, 0, 14, nullptr).first;
    Point best = std::min_element(prior.begin(), prior.end(), [](auto& a, auto& b) { return a.value < b.value; })->x;
    for (auto& o : prior) o.source = 1;
    std::vector<Point> first;
    warm_best.push_back(run(prior, 1000 + s, 0.1, 14, &first).second);
    cold_best.push_back(run({}, 1000 + s, 0.1, 14, nullptr).second);
    for (const auto& x : first) best_choice += x[2] == best[2] ? 1.0 / static_cast<double>(first.size()) : 0;
    first_distance += std::hypot(first[0][0] - best[0], first[0][1] - best[1]) + (first[0][2] == best[2] ? 0 : 1);
  }
  fmt::print(
      "warm start, {} seeds (width {:g}, prior width {:g}): first batch's picks with the prior's best optimizer "
      "{:.0f}%, first pick's mean distance to the prior's best {:.3f}; moved problem, median best after 14 trials: "
      "warm {:.2g}, cold {:.2g}\n",
      seeds, tpe_options.width, tpe_options.prior_width, 100 * best_choice / seeds, first_distance / seeds,
      Median(warm_best), Median(cold_best));
}

struct Cell {
  double median_regret = 0, median_regret_early = 0;
  double median_hit = 0;  // trials until the optimum was found (budget + 1: not found)
};

int Main(int argc, char** argv) {
  fs::path source = SLURMSWEEP_SOURCE_DIR;
  fs::path data = source / "bench/data";
  std::string python = fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  // 5 seeds by default (a couple of minutes, most of it Optuna); --full: the 20 of README's table.
  int seeds = 5, budget = 50, early = 15;
  bool optuna = true, warm = false;
  std::vector<int> batches = {1, 8};
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--seeds") seeds = std::stoi(next());
    else if (a == "--full") seeds = 20;
    else if (a == "--budget") budget = std::stoi(next());
    else if (a == "--python") python = next();
    else if (a == "--no-optuna") optuna = false;
    else if (a == "--problem") only = next();
    else if (a == "--batch") batches = {std::stoi(next())};
    else if (a == "--candidates") tpe_options.candidates = std::stoi(next());
    else if (a == "--startup") tpe_options.startup = std::stoi(next());
    else if (a == "--width") tpe_options.width = std::stod(next());
    else if (a == "--prior-width") tpe_options.prior_width = std::stod(next());
    else if (a == "--independent") tpe_options.independent = std::stod(next());
    else if (a == "--warm") warm = true;
    else {
      std::cerr << "usage: search_bench [--full | --seeds N] [--budget N] [--problem NAME] [--batch K] [--no-optuna] "
                   "[--python PATH] [--width X] [--prior-width X] [--independent X] [--warm]\n";
      return a == "--help" ? 0 : 2;
    }
  }
  if (warm) {
    WarmBench(seeds);
    return 0;
  }
  std::vector<Problem> problems = {Branin(), Hartmann6(), Mixed(), Workload(data), Megatron(data)};
  if (!only.empty()) {
    std::erase_if(problems, [&](const Problem& p) { return p.name != only; });
    if (problems.empty()) throw std::runtime_error("no problem named " + only);
  }
  fmt::print("search_bench: median simple regret after {} trials (and after {}) over {} seeds; batches of {}{}\n",
             budget, early, seeds, fmt::join(batches, " and "),
             seeds < 20 ? " (README's table: --full, 20 seeds; medians of fewer move by more than the gaps)" : "");
  for (const auto& p : problems) fmt::print("  {:<17} {} (optimum {:.6g})\n", p.name, p.source, p.optimum);

  std::vector<std::string> methods = {"tpe (slurmsweep)", "random"};
  std::unique_ptr<Optuna> opt;
  if (optuna) {
    opt = std::make_unique<Optuna>(python, source / "bench/search_bench_optuna.py");
    methods.push_back("optuna TPE default");
    methods.push_back("optuna TPE multivariate+liar");
  }
  // results[problem][batch][method]
  std::map<std::string, std::map<int, std::map<std::string, Cell>>> results;
  auto started = std::chrono::steady_clock::now();
  for (const auto& p : problems) {
    for (int batch : batches) {
      for (const auto& m : methods) {
        std::vector<double> regret, regret_early, hit;
        for (int s = 1; s <= seeds; ++s) {
          Trace t;
          if (m == "tpe (slurmsweep)") t = RunTpe(p, budget, batch, s);
          else if (m == "random") t = RunRandom(p, budget, s);
          else t = opt->Run(p, m == "optuna TPE default" ? "default" : "multivariate", budget, batch, s);
          if (t.empty()) throw std::runtime_error(m + " found nothing on " + p.name);
          regret.push_back(t.back() - p.optimum);
          regret_early.push_back(t[std::min<size_t>(early, t.size()) - 1] - p.optimum);
          auto at = std::find_if(t.begin(), t.end(), [&](double v) { return v <= p.optimum + 1e-12; });
          hit.push_back(at == t.end() ? budget + 1 : static_cast<double>(at - t.begin() + 1));
        }
        results[p.name][batch][m] = {Median(regret), Median(regret_early), Median(hit)};
      }
    }
  }
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  fmt::print("\n| problem | batch |");
  for (const auto& m : methods) fmt::print(" {} |", m);
  fmt::print("\n|---|---|");
  for (size_t i = 0; i < methods.size(); ++i) fmt::print("---|");
  fmt::print("\n");
  bool all_ok = true;
  for (const auto& p : problems) {
    for (int batch : batches) {
      auto& row = results[p.name][batch];
      fmt::print("| {} | {} |", p.name, batch);
      for (const auto& m : methods) {
        fmt::print(" {:.3g} ({:.3g}", row[m].median_regret, row[m].median_regret_early);
        if (p.table) {
          if (row[m].median_hit > budget) fmt::print("; best not found");
          else fmt::print("; best at {:g}", row[m].median_hit);
        }
        fmt::print(") |");
      }
      fmt::print("\n");
      const Cell& ours = row["tpe (slurmsweep)"];
      // Targets: no worse than Optuna's TPE with batches of 8, better than random everywhere
      // (after the budget, or after `early` trials where both have found the optimum).
      auto beats = [&](const Cell& other) {
        if (ours.median_regret < other.median_regret) return true;
        if (ours.median_regret > other.median_regret) return false;
        if (ours.median_regret_early != other.median_regret_early)
          return ours.median_regret_early < other.median_regret_early;
        return ours.median_hit < other.median_hit;
      };
      if (!beats(row["random"])) all_ok = false;
      if (optuna && batch == 8) {
        for (const char* o : {"optuna TPE default", "optuna TPE multivariate+liar"}) {
          if (ours.median_regret > row[o].median_regret) all_ok = false;
        }
      }
    }
  }
  fmt::print(
      "cells: median simple regret after {} trials (after {} in parentheses; tables: and the median trial at which "
      "the best recorded configuration was found); lower is better\n",
      budget, early);
  fmt::print("targets (batches of 8: no worse than both Optuna TPEs; every batch: better than random): {}\n",
             all_ok ? "met" : "NOT met");

  Problem speed = Hartmann6();
  double s6 = ProposeSeconds(speed, 1000, 20);
  Problem mixed = Mixed();
  double sm = ProposeSeconds(mixed, 1000, 20);
  fmt::print(
      "propose one trial with 1000 in the study: {:.2f} ms on hartmann6 ({:.3f} of the 20 ms limit), "
      "{:.2f} ms on mixed ({:.3f} of it)\n",
      s6 * 1e3, s6 / 0.02, sm * 1e3, sm / 0.02);
  fmt::print("bench time {:.0f} s\n", elapsed);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "search_bench: " << e.what() << "\n";
    return 1;
  }
}
