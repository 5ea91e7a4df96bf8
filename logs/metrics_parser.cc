// Metric extraction from training logs. The Megatron path is a hand-written scanner over
// string_view (no regex, no per-field allocation besides point names) because the monitor
// re-reads the logs of every running trial; JSON lines go through nlohmann::json.
#include "logs/metrics_parser.h"

#include "base/text.h"

#include "logs/framework_logs.h"
#include "logs/parse_util.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <system_error>

namespace sweep::logs {

namespace {

// Megatron's long field names, by their snake_case spelling, to the names the rest of
// slurmsweep (objectives, reports, divergence checks) refers to.
struct Rename {
  std::string_view from, to;
};
constexpr Rename kMegatronRenames[] = {
    {"elapsed_time_per_iteration_ms", "iter_time_ms"},
    {"throughput_per_gpu_tflop_s_gpu", "throughput_tflops"},
    {"number_of_skipped_iterations", "skipped_iters"},
    {"number_of_nan_iterations", "nan_iters"},
};

std::string_view Renamed(std::string_view snake) {
  for (const Rename& r : kMegatronRenames) {
    if (r.from == snake) return r.to;
  }
  return snake;
}

bool LooksNumeric(std::string_view v) {
  return !v.empty() && (IsDigit(v.front()) || v.front() == '-' || v.front() == '+' || v.front() == '.');
}

// Strips what precedes Megatron's own text: an `srun --label` rank ("0: ") and the
// "[2024-09-03 15:56:55]" timestamp newer versions print.
std::string_view StripLinePrefix(std::string_view line) {
  line = SkipSpaces(line);
  size_t i = 0;
  while (i < line.size() && IsDigit(line[i])) ++i;
  if (i > 0 && i < line.size() && line[i] == ':') line = SkipSpaces(line.substr(i + 1));
  if (!line.empty() && line.front() == '[') {
    size_t close = line.find(']');
    if (close != std::string_view::npos) line = SkipSpaces(line.substr(close + 1));
  }
  return line;
}

class MegatronLineParser {
 public:
  MegatronLineParser(ParseOutput& out, ParserState& state) : out_(out), state_(state) {}

  void Parse(std::string_view line) {
    line = StripLinePrefix(line);
    size_t bar = line.find('|');
    if (bar == std::string_view::npos) return;  // banners, warnings, stack traces
    std::string_view head = line.substr(0, bar);
    std::string_view fields = line.substr(bar + 1);
    constexpr std::string_view kIteration = "iteration";
    constexpr std::string_view kValidation = "validation loss at";
    if (head.starts_with(kIteration) && head.size() > kIteration.size() && IsSpace(head[kIteration.size()])) {
      if (!ParseIteration(head.substr(kIteration.size()), fields)) ++out_.malformed;
    } else if (head.starts_with(kValidation)) {
      if (!ParseValidation(head.substr(kValidation.size()), fields)) ++out_.malformed;
    } else if (head.starts_with("(after ") && head.find("memory (MB)") != std::string_view::npos) {
      if (!ParseMemory(head.substr(7), fields)) ++out_.malformed;
    }
  }

 private:
  // head: "       20/  500000 " (the total is optional).
  bool ParseIteration(std::string_view head, std::string_view fields) {
    head = SkipSpaces(head);
    int64_t step = 0;
    if (!ConsumeInt(head, &step) || step < 0) return false;
    head = SkipSpaces(head);
    int64_t total = 0;
    if (ConsumePrefix(head, "/")) {
      head = SkipSpaces(head);
      if (!ConsumeInt(head, &total)) return false;
    }
    if (!Trim(head).empty()) return false;

    size_t first = out_.points.size();
    double iter_time_ms = std::numeric_limits<double>::quiet_NaN();
    if (!ParseFields(fields, step, /*validation=*/false, &iter_time_ms)) {
      out_.points.resize(first);
      return false;
    }
    // The run's length, stored when it first shows or changes: what a stopped trial would still
    // have run (the report's GPU-hours saved).
    if (total > 0 && total != state_.train_iters) {
      out_.train_iters = MetricPoint{step, 0, "train_iters", static_cast<double>(total)};
      state_.train_iters = total;
    }
    double time_s = state_.time_s;
    if (std::isfinite(iter_time_ms) && iter_time_ms >= 0) {
      // A resumed run logs steps it already logged; clamping keeps the axis monotonic.
      int64_t steps = step > state_.last_step ? step - state_.last_step : 0;
      time_s += static_cast<double>(steps) * iter_time_ms / 1000.0;
      state_.last_step = step;
      state_.time_s = time_s;
      out_.time_key = "elapsed time per iteration (ms)";
    }
    // Without an iteration time last_step stays put, so the next timed line covers the gap.
    for (size_t i = first; i < out_.points.size(); ++i) out_.points[i].time_s = time_s;
    if (out_.train_iters && out_.train_iters->step == step) out_.train_iters->time_s = time_s;
    return true;
  }

  // head: " iteration 100 " (optionally followed by " on validation set"); the end-of-training
  // evaluation has no step and is skipped.
  bool ParseValidation(std::string_view head, std::string_view fields) {
    head = SkipSpaces(head);
    if (!ConsumePrefix(head, "iteration")) return true;
    head = SkipSpaces(head);
    int64_t step = 0;
    if (!ConsumeInt(head, &step) || step < 0) return false;
    size_t first = out_.points.size();
    if (!ParseFields(fields, step, /*validation=*/true, nullptr)) {
      out_.points.resize(first);
      return false;
    }
    // Evaluation runs right after the training step it names, so it shares that step's time.
    for (size_t i = first; i < out_.points.size(); ++i) out_.points[i].time_s = state_.time_s;
    return true;
  }

  // Megatron's report_memory, printed by each data-parallel rank 0 (so once per TP/PP rank):
  // "[Rank 3] (after 10 iterations) memory (MB) | allocated: 1.2 | max allocated: 3.4 |
  // reserved: 5.6 | max reserved: 7.8". Points "mem_allocated_mb", "mem_max_allocated_mb", ...; of
  // the ranks in one read the largest value is kept: the peak is what decides an OOM.
  bool ParseMemory(std::string_view head, std::string_view fields) {
    int64_t step = 0;
    head = SkipSpaces(head);
    if (!ConsumeInt(head, &step) || step < 0) return false;
    while (!fields.empty()) {
      std::string_view key, value_text;
      if (!NextField(fields, &key, &value_text)) continue;
      std::string snake;
      SnakeCase(key, &snake);
      double value = 0;
      if (!ParseDouble(value_text, &value)) return false;
      std::string name = "mem_" + snake + "_mb";
      auto same = std::find_if(out_.points.begin(), out_.points.end(),
                               [&](const MetricPoint& p) { return p.step == step && p.name == name; });
      if (same != out_.points.end()) {
        same->value = std::max(same->value, value);
        continue;
      }
      MetricPoint& p = out_.points.emplace_back();
      p.step = step;
      p.time_s = state_.time_s;
      p.name = std::move(name);
      p.value = value;
    }
    return true;
  }

  // The point name a printed key stands for. Every line of a run prints the same keys, so they
  // are normalized once per call and found again by the field's position.
  struct FieldName {
    std::string key;  // as printed: "elapsed time per iteration (ms)"
    bool validation = false;
    std::string name;             // "iter_time_ms", "val_lm_loss"; empty: not a metric
    bool must_be_number = false;  // a name slurmsweep relies on, so a text value is corruption
    bool is_iter_time = false;
  };

  const FieldName& Lookup(std::string_view key, bool validation, size_t position) {
    auto matches = [&](const FieldName& f) { return f.validation == validation && f.key == key; };
    if (position < names_.size() && matches(names_[position])) return names_[position];
    for (const FieldName& f : names_) {
      if (matches(f)) return f;
    }
    FieldName f;
    f.key = key;
    f.validation = validation;
    SnakeCase(key, &f.name);
    if (validation) {
      // "lm loss value: 2.3" on a validation line means the validation lm_loss.
      constexpr std::string_view kValue = "_value";
      if (f.name.size() > kValue.size() && std::string_view(f.name).ends_with(kValue)) {
        f.name.resize(f.name.size() - kValue.size());
      }
    }
    std::string_view renamed = Renamed(f.name);
    f.must_be_number = renamed != std::string_view(f.name) || IsKnownName(renamed);
    f.is_iter_time = !validation && renamed == "iter_time_ms";
    f.name = std::string(validation && !f.name.empty() ? "val_" : "") + std::string(renamed);
    // Garbage can invent keys without end; past a run's worth of names they are not kept.
    constexpr size_t kMaxCachedNames = 64;
    if (names_.size() >= kMaxCachedNames) {
      uncached_ = std::move(f);
      return uncached_;
    }
    return names_.emplace_back(std::move(f));
  }

  // Appends one point per "key: number" field; false if a field is not parseable.
  bool ParseFields(std::string_view fields, int64_t step, bool validation, double* iter_time_ms) {
    size_t position = 0;
    while (!fields.empty()) {
      std::string_view key, value_text;
      if (!NextField(fields, &key, &value_text)) continue;  // blank, or a bare word: nothing to measure
      const FieldName& f = Lookup(key, validation, position++);
      if (f.name.empty()) continue;
      double value = 0;
      if (!ParseDouble(value_text, &value)) {
        // "1.2.3" is a corrupt number; "bf16" is a text field some fork added.
        if (f.must_be_number || LooksNumeric(value_text)) return false;
        continue;
      }
      if (f.is_iter_time && iter_time_ms != nullptr) *iter_time_ms = value;
      MetricPoint& p = out_.points.emplace_back();
      p.step = step;
      p.name = f.name;
      p.value = value;
    }
    return true;
  }

  static bool IsKnownName(std::string_view name) {
    return name == "lm_loss" || name == "learning_rate" || name == "global_batch_size" || name == "loss_scale" ||
           name == "grad_norm" || name == "consumed_samples";
  }

  ParseOutput& out_;
  ParserState& state_;
  std::vector<FieldName> names_;
  FieldName uncached_;
};

// Python's json module writes NaN, Infinity and -Infinity bare, which is not JSON. A diverged
// run is exactly when they appear, so on a parse failure they are quoted and retried; quoted
// spellings are then read back as numbers by JsonNumber.
std::string QuoteNonFiniteTokens(std::string_view line) {
  std::string out;
  out.reserve(line.size() + 16);
  bool in_string = false;
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (in_string) {
      out.push_back(c);
      if (c == '\\' && i + 1 < line.size()) {
        out.push_back(line[++i]);
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
      out.push_back(c);
      continue;
    }
    std::string_view rest = line.substr(i);
    bool matched = false;
    for (std::string_view token : {"-Infinity", "Infinity", "NaN"}) {
      if (rest.starts_with(token)) {
        out.push_back('"');
        out.append(token);
        out.push_back('"');
        i += token.size() - 1;
        matched = true;
        break;
      }
    }
    if (!matched) out.push_back(c);
  }
  return out;
}

bool JsonNumber(const nlohmann::json& v, double* out) {
  if (v.is_number()) {
    *out = v.get<double>();
    return true;
  }
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s == "NaN" || s == "nan") {
      *out = std::numeric_limits<double>::quiet_NaN();
    } else if (s == "Infinity" || s == "inf") {
      *out = std::numeric_limits<double>::infinity();
    } else if (s == "-Infinity" || s == "-inf") {
      *out = -std::numeric_limits<double>::infinity();
    } else {
      return false;
    }
    return true;
  }
  return false;
}

bool JsonStep(const nlohmann::json& v, int64_t* out) {
  if (v.is_number_integer()) {
    *out = v.get<int64_t>();
    return *out >= 0;
  }
  if (v.is_number_float()) {  // 10.0 from a logger that keeps everything as float
    double d = v.get<double>();
    if (!(d >= 0 && d < 9e18) || d != std::floor(d)) return false;
    *out = static_cast<int64_t>(d);
    return true;
  }
  return false;
}

constexpr std::string_view kStepKeys[] = {"step", "iteration", "iter"};
constexpr std::string_view kTimeKeys[] = {"time", "elapsed", "time_s"};
// The run's length, stored as metric train_iters like Megatron's "iteration N/ M" (README).
constexpr std::string_view kTotalStepsKey = "total_steps";

// The axes of a record, not metrics.
bool IsAxisKey(std::string_view key) {
  for (std::string_view k : kStepKeys) {
    if (k == key) return true;
  }
  for (std::string_view k : kTimeKeys) {
    if (k == key) return true;
  }
  return false;
}

void FlattenJson(const nlohmann::json& obj, const std::string& prefix, int64_t step, ParseOutput& out) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& value = it.value();
    if (prefix.empty() && (IsAxisKey(key) || key == kTotalStepsKey)) continue;
    std::string name = prefix.empty() ? key : prefix + "." + key;
    if (value.is_object()) {
      FlattenJson(value, name, step, out);
      continue;
    }
    double d = 0;
    if (!JsonNumber(value, &d)) continue;  // strings, booleans, arrays, null
    MetricPoint& p = out.points.emplace_back();
    p.step = step;
    p.name = std::move(name);
    p.value = d;
  }
}

void ParseJsonLine(std::string_view line, ParseOutput& out, ParserState& state) {
  line = Trim(line);
  if (line.empty() || line.front() != '{') return;  // print()s and warnings between records
  nlohmann::json obj = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (obj.is_discarded()) obj = nlohmann::json::parse(QuoteNonFiniteTokens(line), nullptr, false);
  if (obj.is_discarded() || !obj.is_object()) {
    ++out.malformed;
    return;
  }
  const nlohmann::json* step_value = nullptr;
  for (std::string_view k : kStepKeys) {
    auto it = obj.find(k);
    if (it != obj.end()) {
      step_value = &*it;
      break;
    }
  }
  // An object without a step is some other structured log record (a config dump, an event).
  if (step_value == nullptr) return;
  int64_t step = 0;
  if (!JsonStep(*step_value, &step)) {
    ++out.malformed;
    return;
  }

  double time_s = state.time_s;
  bool have_time = false;
  for (std::string_view k : kTimeKeys) {
    auto it = obj.find(k);
    if (it != obj.end() && JsonNumber(*it, &time_s) && std::isfinite(time_s)) {
      have_time = true;
      out.time_key = k;
      break;
    }
    time_s = state.time_s;
  }
  if (!have_time) {
    // iteration_time is in seconds, as Megatron's TensorBoard "iteration-time" is.
    double per_step_s = std::numeric_limits<double>::quiet_NaN();
    double v = 0;
    auto ms = obj.find("iter_time_ms");
    auto sec = obj.find("iteration_time");
    std::string_view key;
    if (ms != obj.end() && JsonNumber(*ms, &v)) {
      per_step_s = v / 1000.0;
      key = "iter_time_ms";
    } else if (sec != obj.end() && JsonNumber(*sec, &v)) {
      per_step_s = v;
      key = "iteration_time";
    }
    if (std::isfinite(per_step_s) && per_step_s >= 0) {
      out.time_key = key;
      int64_t steps = step > state.last_step ? step - state.last_step : 0;
      time_s = state.time_s + static_cast<double>(steps) * per_step_s;
      have_time = true;
    }
  }
  if (have_time) {
    state.last_step = step;
    state.time_s = time_s;
  }

  // When it first shows or changes: the ETA then knows a running trial's end from its own rate.
  if (auto it = obj.find(kTotalStepsKey); it != obj.end()) {
    int64_t total = 0;
    if (JsonStep(*it, &total) && total > 0 && total != state.train_iters) {
      out.train_iters = MetricPoint{step, time_s, "train_iters", static_cast<double>(total)};
      state.train_iters = total;
    }
  }

  size_t first = out.points.size();
  FlattenJson(obj, "", step, out);
  for (size_t i = first; i < out.points.size(); ++i) out.points[i].time_s = time_s;
}

// The points of a line from `first` on whose names are not stored: names are what the log
// printed (README: metrics), so a garbled or hostile log could name a metric with control bytes,
// invalid UTF-8 or 5,000 characters. Such a point is dropped and its line counted malformed.
void DropUnfitNames(ParseOutput& out, size_t first) {
  auto unfit = [](const MetricPoint& p) { return !IsStorableMetricName(p.name); };
  auto bad = std::remove_if(out.points.begin() + static_cast<std::ptrdiff_t>(first), out.points.end(), unfit);
  if (bad == out.points.end()) return;
  out.points.erase(bad, out.points.end());
  ++out.malformed;
}

}  // namespace

bool IsStorableMetricName(std::string_view name) {
  if (name.empty() || name.size() > kMaxMetricNameBytes) return false;
  for (size_t i = 0; i < name.size();) {
    size_t n = CleanCharLength(name, i);
    if (n == 0 || name[i] == '\t' || name[i] == '\n' || name[i] == '\r') return false;
    i += n;
  }
  return true;
}

ParseOutput ParseMetrics(std::string_view chunk, const LogFormat& format, ParserState& state) {
  ParseOutput out;
  MegatronLineParser megatron(out, state);
  // Returns whether `line` is a metric line of format `f` (what "auto" goes by).
  auto parse_as = [&](MetricFormat f, std::string_view line) -> bool {
    size_t before = out.points.size(), malformed = out.malformed;
    switch (f) {
      case MetricFormat::kMegatron:
        megatron.Parse(line);
        break;
      case MetricFormat::kJsonLines:
        ParseJsonLine(line, out, state);
        break;
      case MetricFormat::kHuggingFace:
        return ParseHuggingFaceLine(line, out, state);
      case MetricFormat::kLightning:
        return ParseLightningLine(line, out, state);
      case MetricFormat::kTorchtitan:
        return ParseTorchtitanLine(line, out, state);
      case MetricFormat::kDeepSpeed:
        return ParseDeepSpeedLine(line, out, state);
      case MetricFormat::kRegex:
      case MetricFormat::kAuto:
        return false;
    }
    if (out.points.size() > before) state.current_step = out.points.back().step;
    return out.points.size() > before || out.malformed > malformed;
  };
  size_t pos = 0;
  if (chunk.empty()) return out;
  if (state.skipping_long_line) {
    const void* nl = std::memchr(chunk.data(), '\n', chunk.size());
    if (nl == nullptr) {
      out.consumed = chunk.size();
      return out;
    }
    pos = static_cast<const char*>(nl) - chunk.data() + 1;
    state.skipping_long_line = false;
    ++out.lines;  // the over-long line ends here; it was counted malformed when it began
  }
  while (pos < chunk.size()) {
    const void* nl = std::memchr(chunk.data() + pos, '\n', chunk.size() - pos);
    if (nl == nullptr) {
      // A partial line that already cannot fit is dropped now: waiting for its end would stall
      // a reader whose chunks are at most kMaxLineBytes long.
      if (chunk.size() - pos >= kMaxLineBytes) {
        ++out.malformed;
        state.skipping_long_line = true;
        pos = chunk.size();
      }
      break;
    }
    size_t end = static_cast<const char*>(nl) - chunk.data();
    std::string_view line = chunk.substr(pos, end - pos);
    pos = end + 1;
    ++out.lines;
    // A line's size counts its newline, so a partial line of kMaxLineBytes is already too long.
    if (line.size() + 1 > kMaxLineBytes) {
      ++out.malformed;
      continue;
    }
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    size_t line_first = out.points.size();
    MetricFormat f = format.format;
    if (f == MetricFormat::kAuto) f = state.detected;
    if (f == MetricFormat::kAuto) {
      f = DetectFormat(line);
      if (f != MetricFormat::kAuto && parse_as(f, line)) state.detected = f;
    } else {
      parse_as(f, line);
    }
    if (!format.regexes.empty())
      ParseRegexLine(line, format.regexes, format.format == MetricFormat::kRegex, out, state);
    DropUnfitNames(out, line_first);
  }
  out.consumed = pos;
  return out;
}

}  // namespace sweep::logs
