// Stand-in for a Megatron-LM training job that replays a real one: given the settings of a run
// recorded in Megatron-LM's functional tests (cases.csv, curves.csv: bench/data/SOURCE.md), it
// prints that run's loss and iteration time per step as Megatron's own log lines on an
// accelerated clock, so a sweep over recorded settings runs on a CPU test cluster with real curves.

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

namespace {

constexpr int kExitDataError = 1;
constexpr int kExitUsage = 2;  // also: no recorded run has the settings asked for
constexpr int kExitSigterm = 143;
constexpr int kExitSigint = 130;

volatile std::sig_atomic_t g_signal = 0;

void OnSignal(int sig) {
  if (g_signal == 0) g_signal = sig;
}

// How a setting is spelled, so that "04" equals "4" and a blank cell equals "none".
enum class KnobKind { kCount, kFlag, kWord };

// A setting that tells recorded runs apart: a column of cases.csv, asked for with the flag
// Megatron-LM itself takes (except --num-gpus, the launcher's world size, and --precision,
// Megatron's --bf16 / --fp16 / --fp8-format hybrid as one word). Boolean flags take true|false
// so that a template can pass every setting as a value.
struct Knob {
  std::string_view flag;
  std::string_view column;
  KnobKind kind;
};

constexpr Knob kKnobs[] = {
    {"--num-gpus", "num_gpus", KnobKind::kCount},
    {"--micro-batch-size", "micro_batch_size", KnobKind::kCount},
    {"--global-batch-size", "global_batch_size", KnobKind::kCount},
    {"--tensor-model-parallel-size", "tp", KnobKind::kCount},
    {"--pipeline-model-parallel-size", "pp", KnobKind::kCount},
    {"--context-parallel-size", "cp", KnobKind::kCount},
    {"--expert-model-parallel-size", "ep", KnobKind::kCount},
    // Model chunks per pipeline stage; the tests set --num-layers-per-virtual-pipeline-stage instead.
    {"--virtual-pipeline-model-parallel-size", "vp", KnobKind::kCount},
    {"--sequence-parallel", "sequence_parallel", KnobKind::kFlag},
    {"--recompute-granularity", "recompute_granularity", KnobKind::kWord},
    {"--recompute-method", "recompute_method", KnobKind::kWord},
    {"--precision", "precision", KnobKind::kWord},
    {"--optimizer", "optimizer", KnobKind::kWord},
    {"--use-distributed-optimizer", "use_distributed_optimizer", KnobKind::kFlag},
    {"--num-layers", "num_layers", KnobKind::kCount},
    {"--hidden-size", "hidden_size", KnobKind::kCount},
    {"--seq-length", "seq_length", KnobKind::kCount},
    {"--train-iters", "train_iters", KnobKind::kCount},
};
constexpr size_t kNumKnobs = std::size(kKnobs);

constexpr size_t KnobIndex(std::string_view column) {
  for (size_t k = 0; k < kNumKnobs; ++k) {
    if (kKnobs[k].column == column) return k;
  }
  throw "no such knob";  // in a constant expression: a compile error
}
constexpr size_t kNumGpusKnob = KnobIndex("num_gpus");
constexpr size_t kGlobalBatchKnob = KnobIndex("global_batch_size");
constexpr size_t kTpKnob = KnobIndex("tp");
constexpr size_t kPpKnob = KnobIndex("pp");
constexpr size_t kCpKnob = KnobIndex("cp");
constexpr size_t kTrainItersKnob = KnobIndex("train_iters");

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// The canonical spelling of a setting, or nullopt if `text` is not one of its kind.
std::optional<std::string> Canonical(KnobKind kind, std::string_view text) {
  text = Trim(text);
  if (text.empty() || text == "none") return std::string("none");
  switch (kind) {
    case KnobKind::kCount: {
      std::int64_t n = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
      if (ec != std::errc() || end != text.data() + text.size() || n < 0) return std::nullopt;
      return std::to_string(n);
    }
    case KnobKind::kFlag:
      if (text == "true" || text == "false") return std::string(text);
      return std::nullopt;
    case KnobKind::kWord:
      return std::string(text);
  }
  return std::nullopt;
}

const char* KindHint(KnobKind kind) {
  switch (kind) {
    case KnobKind::kCount:
      return "a whole number, or none";
    case KnobKind::kFlag:
      return "true or false";
    case KnobKind::kWord:
      return "a word, or none";
  }
  return "?";
}

struct Config {
  std::string data_dir = ".";
  double speedup = 1;
  std::string case_name;  // empty: chosen by the settings alone
  std::vector<std::optional<std::string>> asked = std::vector<std::optional<std::string>>(kNumKnobs);
};

std::string Usage() {
  std::string u =
      "usage: megatron_replay [--name value]...\n"
      "Replays the recorded Megatron-LM run whose settings equal every setting given (settings not\n"
      "given match any value; blank cells of cases.csv are spelled none) as Megatron log lines.\n"
      "  --data DIR        directory holding cases.csv and curves.csv (default .)\n"
      "  --speedup X       clock rate: each step sleeps its recorded time / X; X < 1 slows down (default 1)\n"
      "  --case NAME       the recorded run by name; settings given must still match\n"
      "settings (cases.csv column):\n";
  for (const Knob& k : kKnobs)
    u += fmt::format("  {:<40} {} ({})\n", fmt::format("{} V", k.flag), k.column, KindHint(k.kind));
  u += "exit codes: 0 done, 1 data files unreadable or malformed, 2 bad arguments or no recorded run\n"
       "with these settings (the nearest are listed), 130 SIGINT, 143 SIGTERM\n";
  return u;
}

[[noreturn]] void UsageError(const std::string& message) {
  std::fprintf(stderr, "megatron_replay: %s\n%s", message.c_str(), Usage().c_str());
  std::exit(kExitUsage);
}

Config ParseArgs(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(Usage().c_str(), stdout);
      std::exit(0);
    }
    const Knob* knob = nullptr;
    for (const Knob& k : kKnobs) {
      if (k.flag == arg) knob = &k;
    }
    if (!knob && arg != "--data" && arg != "--speedup" && arg != "--case") {
      UsageError(fmt::format("unknown argument '{}'{}", arg,
                             arg.find('=') != std::string_view::npos ? " (use '--name value', not '=')" : ""));
    }
    if (i + 1 >= argc) UsageError(fmt::format("missing value for {}", arg));
    const std::string_view value = argv[++i];
    if (arg == "--data") {
      c.data_dir = value;
    } else if (arg == "--case") {
      c.case_name = value;
    } else if (arg == "--speedup") {
      double x = 0;
      auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), x);
      if (ec != std::errc() || end != value.data() + value.size() || !(x > 0) || !std::isfinite(x)) {
        UsageError(fmt::format("invalid value '{}' for --speedup (expected a number > 0)", value));
      }
      c.speedup = x;
    } else {
      auto canonical = Canonical(knob->kind, value);
      if (!canonical) {
        UsageError(fmt::format("invalid value '{}' for {} (expected {})", value, knob->flag, KindHint(knob->kind)));
      }
      c.asked[static_cast<size_t>(knob - kKnobs)] = std::move(*canonical);
    }
  }
  return c;
}

// An expected failure: the message for stderr and the exit code it maps to.
struct Failure {
  int exit_code;
  std::string message;
};

// A CSV file as cells by row, with its header. Cells may be blank, quoted ("a,b", "say ""hi""")
// or padded with spaces; CRLF line ends, a UTF-8 BOM, blank lines and '#' comment lines are
// tolerated. A quoted cell cannot span lines: these files never need it.
struct CsvTable {
  std::string path;
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> lines;  // each row's line number, for errors

  std::optional<size_t> Column(std::string_view name) const {
    auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) return std::nullopt;
    return static_cast<size_t>(it - header.begin());
  }
  std::string Where(size_t row) const { return fmt::format("{}:{}", path, lines[row]); }
};

// Cells of one line; false on an unterminated quote or text after a closing quote.
bool SplitCsvLine(std::string_view line, std::vector<std::string>* cells) {
  cells->clear();
  size_t i = 0;
  while (true) {
    std::string cell;
    size_t start = i;
    while (i < line.size() && line[i] == ' ') ++i;
    if (i < line.size() && line[i] == '"') {
      for (++i;; ++i) {
        if (i >= line.size()) return false;
        if (line[i] != '"') {
          cell += line[i];
        } else if (i + 1 < line.size() && line[i + 1] == '"') {
          cell += '"';
          ++i;
        } else {
          break;
        }
      }
      ++i;
      while (i < line.size() && line[i] == ' ') ++i;
      if (i < line.size() && line[i] != ',') return false;
    } else {
      i = std::min(line.find(',', start), line.size());
      cell = Trim(line.substr(start, i - start));
    }
    cells->push_back(std::move(cell));
    if (i >= line.size()) return true;
    ++i;  // past the comma: a trailing comma leaves one more, blank cell
  }
}

std::optional<Failure> ReadCsv(const std::string& path, CsvTable* table) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Failure{kExitDataError, fmt::format("cannot read {}: {}", path, std::strerror(errno))};
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.starts_with("\xEF\xBB\xBF")) text.erase(0, 3);
  table->path = path;
  std::istringstream lines(text);
  std::string line;
  std::vector<std::string> cells;
  for (int number = 1; std::getline(lines, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string_view content = Trim(line);
    if (content.empty() || content.front() == '#') continue;
    if (!SplitCsvLine(line, &cells)) {
      return Failure{kExitDataError, fmt::format("{}:{}: malformed quoting", path, number)};
    }
    if (table->header.empty()) {
      table->header = cells;
      continue;
    }
    if (cells.size() != table->header.size()) {
      return Failure{kExitDataError, fmt::format("{}:{}: {} cells, but the header has {}", path, number, cells.size(),
                                                 table->header.size())};
    }
    table->rows.push_back(cells);
    table->lines.push_back(number);
  }
  if (table->header.empty()) return Failure{kExitDataError, fmt::format("{}: no header line", path)};
  return std::nullopt;
}

std::optional<Failure> RequireColumns(const CsvTable& t, std::initializer_list<std::string_view> names,
                                      std::vector<size_t>* out) {
  for (std::string_view name : names) {
    auto col = t.Column(name);
    if (!col) return Failure{kExitDataError, fmt::format("{}: no column '{}'", t.path, name)};
    out->push_back(*col);
  }
  return std::nullopt;
}

// A blank cell is nullopt; "nan" parses, since a diverged run logs it.
bool ParseOptionalDouble(std::string_view text, std::optional<double>* out) {
  if (text.empty()) {
    *out = std::nullopt;
    return true;
  }
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size()) return false;
  *out = v;
  return true;
}

struct RecordedStep {
  std::int64_t step = 0;
  std::optional<double> loss;
  std::optional<double> time_s;  // this iteration's time; the first recorded one includes start-up
};

struct RecordedCase {
  std::string name, variant;
  std::vector<std::string> settings;  // canonical, one per kKnobs entry
  std::vector<RecordedStep> curve;    // ordered by step
  std::optional<double> steady_time_s;

  int StepsWithLoss() const {
    return static_cast<int>(
        std::count_if(curve.begin(), curve.end(), [](const auto& s) { return s.loss.has_value(); }));
  }
  int StepsWithTime() const {
    return static_cast<int>(
        std::count_if(curve.begin(), curve.end(), [](const auto& s) { return s.time_s.has_value(); }));
  }
  bool Replayable() const { return StepsWithLoss() > 0 && steady_time_s.has_value(); }
};

// The median of the recorded iteration times after the first, which includes start-up (2 to 19 s
// against 0.05 to 5 s per step in these runs); nullopt with fewer than two recorded times. It
// stands for the first recorded time and for steps without one, as bench/stopping_bench does.
std::optional<double> SteadyIterationTime(const std::vector<RecordedStep>& curve) {
  std::vector<double> times;
  for (const RecordedStep& s : curve) {
    if (s.time_s) times.push_back(*s.time_s);
  }
  if (times.size() < 2) return std::nullopt;
  times.erase(times.begin());
  std::sort(times.begin(), times.end());
  const size_t n = times.size();
  return n % 2 == 1 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
}

std::optional<Failure> LoadRecordedCases(const std::string& dir, std::vector<RecordedCase>* out) {
  CsvTable cases, curves;
  if (auto f = ReadCsv(dir + "/cases.csv", &cases)) return f;
  if (auto f = ReadCsv(dir + "/curves.csv", &curves)) return f;
  std::vector<size_t> case_cols, knob_cols, curve_cols;
  if (auto f = RequireColumns(cases, {"case", "variant"}, &case_cols)) return f;
  for (const Knob& k : kKnobs) {
    if (auto f = RequireColumns(cases, {k.column}, &knob_cols)) return f;
  }
  if (auto f = RequireColumns(curves, {"case", "variant", "step", "lm_loss", "iteration_time_s"}, &curve_cols))
    return f;

  std::map<std::pair<std::string, std::string>, size_t> index;
  for (size_t r = 0; r < cases.rows.size(); ++r) {
    const auto& row = cases.rows[r];
    RecordedCase c;
    c.name = row[case_cols[0]];
    c.variant = row[case_cols[1]];
    for (size_t k = 0; k < kNumKnobs; ++k) {
      auto v = Canonical(kKnobs[k].kind, row[knob_cols[k]]);
      if (!v) {
        return Failure{kExitDataError, fmt::format("{}: column '{}' holds '{}', not {}", cases.Where(r),
                                                   kKnobs[k].column, row[knob_cols[k]], KindHint(kKnobs[k].kind))};
      }
      c.settings.push_back(std::move(*v));
    }
    if (!index.emplace(std::pair{c.name, c.variant}, out->size()).second) {
      return Failure{kExitDataError,
                     fmt::format("{}: case {} ({}) is listed twice", cases.Where(r), c.name, c.variant)};
    }
    out->push_back(std::move(c));
  }
  for (size_t r = 0; r < curves.rows.size(); ++r) {
    const auto& row = curves.rows[r];
    auto it = index.find({row[curve_cols[0]], row[curve_cols[1]]});
    if (it == index.end()) continue;  // a run whose settings are unknown cannot be asked for
    RecordedStep s;
    const std::string& step = row[curve_cols[2]];
    auto [end, ec] = std::from_chars(step.data(), step.data() + step.size(), s.step);
    bool ok = ec == std::errc() && end == step.data() + step.size() && s.step >= 1 &&
              ParseOptionalDouble(row[curve_cols[3]], &s.loss) && ParseOptionalDouble(row[curve_cols[4]], &s.time_s) &&
              (!s.time_s || (*s.time_s >= 0 && std::isfinite(*s.time_s)));
    if (!ok) {
      return Failure{kExitDataError,
                     fmt::format("{}: step, lm_loss or iteration_time_s is not a valid number", curves.Where(r))};
    }
    (*out)[it->second].curve.push_back(s);
  }
  for (RecordedCase& c : *out) {
    std::stable_sort(c.curve.begin(), c.curve.end(), [](const auto& a, const auto& b) { return a.step < b.step; });
    auto dup = std::adjacent_find(c.curve.begin(), c.curve.end(),
                                  [](const auto& a, const auto& b) { return a.step == b.step; });
    if (dup != c.curve.end()) {
      return Failure{kExitDataError,
                     fmt::format("{}: case {} ({}) has step {} twice", curves.path, c.name, c.variant, dup->step)};
    }
    c.steady_time_s = SteadyIterationTime(c.curve);
  }
  return std::nullopt;
}

// Settings asked for that `c` does not have.
std::vector<size_t> Mismatches(const Config& cfg, const RecordedCase& c) {
  std::vector<size_t> out;
  for (size_t k = 0; k < kNumKnobs; ++k) {
    if (cfg.asked[k] && *cfg.asked[k] != c.settings[k]) out.push_back(k);
  }
  return out;
}

std::string AskedSettings(const Config& cfg) {
  std::string s;
  if (!cfg.case_name.empty()) s = "--case " + cfg.case_name;
  for (size_t k = 0; k < kNumKnobs; ++k) {
    if (cfg.asked[k]) s += fmt::format("{}{} {}", s.empty() ? "" : " ", kKnobs[k].flag, *cfg.asked[k]);
  }
  return s.empty() ? "(no settings)" : s;
}

std::string CaseLabel(const RecordedCase& c) { return fmt::format("{} ({})", c.name, c.variant); }

// The recorded run to replay: the one whose settings match, or of several the one with the most
// recorded steps (a full curve over one sampled every 5th step), then the first by name, so the
// same arguments always replay the same run.
std::optional<Failure> SelectCase(const Config& cfg, const std::vector<RecordedCase>& cases,
                                  const RecordedCase** chosen) {
  std::vector<const RecordedCase*> candidates, matches;
  bool named_exists = false;
  for (const RecordedCase& c : cases) {
    if (!cfg.case_name.empty() && c.name != cfg.case_name) continue;
    named_exists = true;
    if (!c.Replayable()) continue;
    candidates.push_back(&c);
    if (Mismatches(cfg, c).empty()) matches.push_back(&c);
  }
  if (!cfg.case_name.empty() && !named_exists) {
    return Failure{kExitUsage, fmt::format("no recorded run is named {} in {}/cases.csv", cfg.case_name, cfg.data_dir)};
  }
  if (candidates.empty()) {
    // A run needs losses to show and a steady iteration time to keep the clock by.
    constexpr std::string_view kCurve = "training curve to replay (losses and two iteration times in curves.csv)";
    return Failure{kExitUsage, cfg.case_name.empty()
                                   ? fmt::format("no recorded run in {} has a {}", cfg.data_dir, kCurve)
                                   : fmt::format("recorded run {} has no {}", cfg.case_name, kCurve)};
  }
  if (matches.empty()) {
    std::stable_sort(candidates.begin(), candidates.end(), [&](const RecordedCase* a, const RecordedCase* b) {
      return std::pair(Mismatches(cfg, *a).size(), a->name) < std::pair(Mismatches(cfg, *b).size(), b->name);
    });
    const size_t best = Mismatches(cfg, *candidates.front()).size();
    std::string msg = fmt::format("no recorded run has the settings {}\nnearest recorded settings ({} setting{}):",
                                  AskedSettings(cfg), best, best == 1 ? " differs" : "s differ");
    constexpr size_t kMaxListed = 5;
    size_t equally_near = 0;
    for (const RecordedCase* c : candidates) {
      if (Mismatches(cfg, *c).size() != best) break;
      if (++equally_near > kMaxListed) continue;
      std::string diff;
      for (size_t k : Mismatches(cfg, *c)) diff += fmt::format(" {} {}", kKnobs[k].flag, c->settings[k]);
      msg += fmt::format("\n  {}:{}", CaseLabel(*c), diff);
    }
    if (equally_near > kMaxListed) msg += fmt::format("\n  and {} more as near", equally_near - kMaxListed);
    return Failure{kExitUsage, msg};
  }
  std::stable_sort(matches.begin(), matches.end(), [](const RecordedCase* a, const RecordedCase* b) {
    return std::tuple(-a->StepsWithLoss(), -a->StepsWithTime(), a->name, a->variant) <
           std::tuple(-b->StepsWithLoss(), -b->StepsWithTime(), b->name, b->variant);
  });
  if (matches.size() > 1) {
    std::string others;
    for (size_t i = 1; i < matches.size(); ++i) others += "\n  " + CaseLabel(*matches[i]);
    std::fprintf(stderr,
                 "megatron_replay: %zu recorded runs have the settings %s; replaying %s (most recorded steps, then "
                 "first by name). The others:%s\n",
                 matches.size(), AskedSettings(cfg).c_str(), CaseLabel(*matches.front()).c_str(), others.c_str());
  }
  *chosen = matches.front();
  return std::nullopt;
}

void Emit(const std::string& line) {
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  // Slurm writes stdout to a file the orchestrator tails; without this it would see nothing
  // until a 4 KB buffer filled.
  std::fflush(stdout);
}

std::string Timestamp() {
  const std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", std::localtime(&now));
  return buf;
}

// Python spells non-finite values nan/inf, where fmt's {:E} would print NAN/INF.
std::string Sci(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{:.6E}", v);
}

std::optional<std::int64_t> Count(const std::string& canonical) {
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(canonical.data(), canonical.data() + canonical.size(), n);
  if (ec != std::errc() || end != canonical.data() + canonical.size()) return std::nullopt;
  return n;
}

void PrintHeader(const Config& cfg, const RecordedCase& c) {
  const auto& s = c.settings;
  const std::int64_t world = Count(s[kNumGpusKnob]).value_or(1);
  const std::int64_t model_parallel =
      Count(s[kTpKnob]).value_or(1) * Count(s[kPpKnob]).value_or(1) * Count(s[kCpKnob]).value_or(1);
  Emit(
      fmt::format("using world size: {}, data-parallel size: {}, context-parallel size: {}, tensor-model-parallel "
                  "size: {}, pipeline-model-parallel size: {}",
                  world, model_parallel > 0 ? world / model_parallel : world, s[kCpKnob], s[kTpKnob], s[kPpKnob]));
  Emit("------------------------ arguments ------------------------");
  for (size_t k = 0; k < kNumKnobs; ++k) {
    std::string name(kKnobs[k].flag.substr(2));
    std::replace(name.begin(), name.end(), '-', '_');
    Emit(fmt::format("  {} {} {}", name, std::string(48 - name.size(), '.'), c.settings[k]));
  }
  Emit("-------------------- end of arguments ---------------------");
  Emit(
      fmt::format("> replaying recorded run {} from {}/curves.csv: {} steps, steady iteration time {:.1f} ms, "
                  "clock speedup {:g}",
                  CaseLabel(c), cfg.data_dir, c.curve.size(), *c.steady_time_s * 1e3, cfg.speedup));
}

// Sleeps in short slices so that a signal cuts the wait short instead of waiting it out.
void InterruptibleSleep(double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                                            std::chrono::duration<double>(seconds));
  while (g_signal == 0) {
    const auto now = std::chrono::steady_clock::now();
    if (now >= until) break;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(until - now, std::chrono::milliseconds(10)));
  }
}

int StopOnSignal(int sig, std::int64_t iteration) {
  Emit(fmt::format("received signal, exiting at iteration {}", iteration));
  return sig == SIGINT ? kExitSigint : kExitSigterm;
}

int Replay(const Config& cfg, const RecordedCase& c) {
  PrintHeader(cfg, c);
  const std::int64_t total = Count(c.settings[kTrainItersKnob]).value_or(c.curve.back().step);
  const std::optional<std::int64_t> global_batch = Count(c.settings[kGlobalBatchKnob]);
  Emit("training ...");
  Emit("[before the start of training step] datetime: " + Timestamp());
  std::int64_t last_step = 0;
  bool seen_time = false;
  for (const RecordedStep& s : c.curve) {
    // A recorded time stands for every step since the previous line (some runs record every 5th);
    // the first one includes start-up, which the training-time axis leaves out.
    double step_s = *c.steady_time_s;
    if (s.time_s && seen_time) step_s = *s.time_s;
    seen_time = seen_time || s.time_s.has_value();
    InterruptibleSleep(static_cast<double>(s.step - last_step) * step_s / cfg.speedup);
    if (g_signal != 0) return StopOnSignal(g_signal, last_step);
    last_step = s.step;
    // Megatron-LM's training_log() fields, widths and order; those the recording lacks (learning
    // rate, grad norm, loss scale, throughput) are left out rather than invented.
    std::string line = fmt::format(" [{}] iteration {:8d}/{:8d} |", Timestamp(), s.step, total);
    if (global_batch) line += fmt::format(" consumed samples: {:12d} |", s.step * *global_batch);
    line += fmt::format(" elapsed time per iteration (ms): {:.1f} |", step_s * 1e3);
    if (global_batch) line += fmt::format(" global batch size: {:5d} |", *global_batch);
    if (s.loss) {
      line += " lm loss: " + Sci(*s.loss) + " |";
      line += fmt::format(" number of nan iterations: {:3d} |", std::isfinite(*s.loss) ? 0 : 1);
    }
    Emit(line);
  }
  Emit("[after training is done] datetime: " + Timestamp());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  const Config cfg = ParseArgs(argc, argv);
  std::vector<RecordedCase> cases;
  const RecordedCase* chosen = nullptr;
  std::optional<Failure> failure = LoadRecordedCases(cfg.data_dir, &cases);
  if (!failure) failure = SelectCase(cfg, cases, &chosen);
  if (failure) {
    std::fprintf(stderr, "megatron_replay: %s\n", failure->message.c_str());
    return failure->exit_code;
  }
  return Replay(cfg, *chosen);
}
