// Training frameworks' log lines as metric points (see framework_logs.h). Progress bars are
// redrawn in place with '\r', so a physical line of a Lightning or Trainer log holds many bar
// states; each '\r'-separated segment is read on its own.
#include "logs/framework_logs.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "logs/parse_util.h"

namespace sweep::logs {
namespace {

void AddPoint(ParseOutput& out, int64_t step, double time_s, std::string name, double value) {
  MetricPoint& p = out.points.emplace_back();
  p.step = step;
  p.time_s = time_s;
  p.name = std::move(name);
  p.value = value;
}

// Splits on '\r' (a progress bar's redraws); empty segments are skipped by the callers.
std::vector<std::string_view> Segments(std::string_view line) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (start <= line.size()) {
    size_t cr = line.find('\r', start);
    if (cr == std::string_view::npos) cr = line.size();
    parts.push_back(line.substr(start, cr - start));
    start = cr + 1;
  }
  return parts;
}

// tqdm's elapsed time: "01:30", "1:12:54", "43:24:54" (hours may exceed 24), "2 days, 1:00:00" is
// not handled (nullopt).
std::optional<double> ParseClockDuration(std::string_view s) {
  s = Trim(s);
  double total = 0;
  int parts = 0;
  while (!s.empty()) {
    int64_t v = 0;
    if (!ConsumeInt(s, &v) || v < 0) return std::nullopt;
    total = total * 60 + static_cast<double>(v);
    ++parts;
    if (s.empty()) break;
    if (!ConsumePrefix(s, ":")) return std::nullopt;
  }
  if (parts < 2 || parts > 3) return std::nullopt;
  return total;
}

// A tqdm bar's counter and time: "...| 500/1689 [01:30<03:29,  5.68it/s, k=v]" or, without a
// total, "...: 1it [00:04,  4.36s/it, k=v]". `rest` is what follows the bar's closing ']'.
struct TqdmBar {
  int64_t n = 0;
  int64_t total = 0;  // 0: unknown
  double elapsed_s = 0;
  std::vector<std::string_view> postfix;  // the bracket's items after the elapsed and rate
  std::string_view rest;
  size_t start = 0;  // where the counter begins in the segment
};

std::optional<TqdmBar> FindTqdmBar(std::string_view seg) {
  size_t search = 0;
  while (true) {
    size_t open = seg.find(" [", search);
    if (open == std::string_view::npos) return std::nullopt;
    search = open + 2;
    // Counter: the token right before " [".
    size_t tok = open;
    while (tok > 0 && !IsSpace(seg[tok - 1]) && seg[tok - 1] != '|') --tok;
    std::string_view counter = seg.substr(tok, open - tok);
    TqdmBar bar;
    bar.start = tok;
    std::string_view c = counter;
    if (!ConsumeInt(c, &bar.n) || bar.n < 0) continue;
    if (ConsumePrefix(c, "/")) {
      if (c == "?") {  // an iterable without a length
        c = {};
      } else if (!ConsumeInt(c, &bar.total) || bar.total <= 0 || !c.empty()) {
        continue;
      }
    } else if (c != "it") {
      continue;
    }
    size_t close = seg.find(']', open);
    if (close == std::string_view::npos) continue;
    std::string_view inside = seg.substr(open + 2, close - open - 2);
    size_t end = inside.find_first_of("<,");
    auto elapsed = ParseClockDuration(inside.substr(0, end));
    if (!elapsed) continue;
    bar.elapsed_s = *elapsed;
    // Items after the elapsed time: "<remaining", the rate, then the postfix's "k=v".
    std::string_view items = end == std::string_view::npos ? std::string_view() : inside.substr(end);
    while (!items.empty()) {
      size_t comma = items.find(", ");
      std::string_view item = Trim(items.substr(0, comma));
      items = comma == std::string_view::npos ? std::string_view() : items.substr(comma + 2);
      if (!item.empty() && item.front() == '<') item = Trim(item.substr(1));
      if (item.find('=') != std::string_view::npos) bar.postfix.push_back(item);
    }
    bar.rest = seg.substr(close + 1);
    return bar;
  }
}

// A Python dict as print() writes it: {'loss': 2.5609, 'learning_rate': 1.9e-05, 'epoch': 0.05}.
// Newer Trainers print the numbers as strings ('1.178'). Numeric values (and nan/inf) are kept,
// other values skipped. False if `text` is not a well-formed flat dict.
bool ParsePythonDict(std::string_view text, std::vector<std::pair<std::string, double>>* items) {
  std::string_view s = Trim(text);
  if (!ConsumePrefix(s, "{")) return false;
  auto read_quoted = [](std::string_view& s, std::string* out) {
    if (s.empty() || (s.front() != '\'' && s.front() != '"')) return false;
    char q = s.front();
    s.remove_prefix(1);
    out->clear();
    while (!s.empty() && s.front() != q) {
      if (s.front() == '\\' && s.size() > 1) s.remove_prefix(1);
      out->push_back(s.front());
      s.remove_prefix(1);
    }
    if (s.empty()) return false;
    s.remove_prefix(1);
    return true;
  };
  s = SkipSpaces(s);
  if (ConsumePrefix(s, "}")) return Trim(s).empty();
  while (true) {
    s = SkipSpaces(s);
    std::string key;
    if (!read_quoted(s, &key)) return false;
    s = SkipSpaces(s);
    if (!ConsumePrefix(s, ":")) return false;
    s = SkipSpaces(s);
    double value = 0;
    bool numeric = false;
    if (!s.empty() && (s.front() == '\'' || s.front() == '"')) {
      std::string text;
      if (!read_quoted(s, &text)) return false;
      numeric = ParseDouble(Trim(text), &value);
    } else {
      size_t end = s.find_first_of(",}");
      if (end == std::string_view::npos) return false;
      std::string_view token = Trim(s.substr(0, end));
      s.remove_prefix(end);
      if (token.empty() || token.front() == '[' || token.front() == '(' || token.front() == '{') return false;
      numeric = ParseDouble(token, &value);
      if (!numeric && token != "True" && token != "False" && token != "None") return false;
    }
    if (numeric) items->emplace_back(std::move(key), value);
    s = SkipSpaces(s);
    if (ConsumePrefix(s, "}")) return Trim(s).empty();
    if (!ConsumePrefix(s, ",")) return false;
  }
}

// The clock of a log line ("[2023-08-02 00:41:17,935] ...", "[rank0]:[titan] 2025-06-04
// 08:51:48,074 - ..."), from the first timestamp in its first 96 bytes.
std::optional<double> LineClock(std::string_view line) {
  size_t limit = std::min<size_t>(line.size(), 96);
  for (size_t i = 0; i + 19 <= line.size() && i < limit; ++i) {
    if (!IsDigit(line[i]) || (i > 0 && IsDigit(line[i - 1]))) continue;
    if (auto t = ParseTimestamp(line.substr(i))) return t;
  }
  return std::nullopt;
}

// Training time from a line clock: seconds since the first metric line. After an orchestrator
// restart the first line seen continues the stored axis.
double ClockTime(double clock, ParseOutput& out, ParserState& state) {
  if (!state.first_clock_s) state.first_clock_s = clock - state.time_s;
  double t = std::max(0.0, clock - *state.first_clock_s);
  state.time_s = t;
  out.time_key = "log timestamp";
  return t;
}

// Stores a line's fields at `step`, timed by the line's clock (else where the axis stands); a
// negative step (the line had none) counts it malformed. True: the line was one of the format's.
bool AddClockedFields(std::string_view line, int64_t step, std::vector<std::pair<std::string, double>>& fields,
                      ParseOutput& out, ParserState& state) {
  if (step < 0) {
    ++out.malformed;
    return true;
  }
  double time_s = state.time_s;
  if (auto clock = LineClock(line)) {
    time_s = ClockTime(*clock, out, state);
    state.last_step = step;
  }
  for (auto& [k, v] : fields) AddPoint(out, step, time_s, std::move(k), v);
  state.current_step = step;
  return true;
}

}  // namespace

bool ParseHuggingFaceLine(std::string_view line, ParseOutput& out, ParserState& state) {
  bool recognized = false;
  for (std::string_view seg : Segments(line)) {
    std::string_view dict_text = seg;
    if (auto bar = FindTqdmBar(seg)) {
      // The training bar is the first one; evaluation bars (other totals) do not move the step.
      if (state.bar_total == 0) state.bar_total = bar->total;
      if (bar->total == state.bar_total) {
        state.bar_step = bar->n;
        state.bar_elapsed_s = bar->elapsed_s;
      }
      dict_text = bar->rest;
    }
    size_t open = dict_text.find("{'");
    if (open == std::string_view::npos) open = dict_text.find("{\"");
    if (open == std::string_view::npos) continue;
    size_t close = dict_text.rfind('}');
    if (close == std::string_view::npos || close < open) {
      ++out.malformed;
      recognized = true;
      continue;
    }
    std::vector<std::pair<std::string, double>> items;
    recognized = true;
    if (!ParsePythonDict(dict_text.substr(open, close - open + 1), &items)) {
      ++out.malformed;
      continue;
    }
    bool training = false, summary = false;
    for (const auto& [k, v] : items) {
      if (k == "loss") training = true;
      if (k == "train_runtime") summary = true;
    }
    int64_t step = 0;
    if (state.bar_step >= 0) {
      step = state.bar_step;
    } else {
      // No bar (disable_tqdm): the training records' ordinal is the only step there is.
      if (training) ++state.records;
      step = state.records;
    }
    if (summary && state.current_step > step) step = state.current_step;
    double time_s = state.time_s;
    if (state.bar_elapsed_s >= 0) {
      time_s = std::max(state.time_s, state.bar_elapsed_s);
      state.time_s = time_s;
      state.last_step = step;
      out.time_key = "progress bar elapsed";
    }
    for (auto& [k, v] : items) AddPoint(out, step, time_s, std::move(k), v);
    state.current_step = step;
  }
  return recognized;
}

namespace {

// NeMo 2's MegatronProgressBar: "Training epoch 0, iteration 17/99 | lr: 1.499e-05 |
// global_step: 17 | reduced_train_loss: 10.51 | train_step_timing in s: 3.551 | ...".
bool ParseNemoIterationLine(std::string_view seg, ParseOutput& out, ParserState& state) {
  size_t at = seg.find("Training epoch ");
  if (at == std::string_view::npos) return false;
  std::string_view s = seg.substr(at + 15);
  int64_t epoch = 0, iteration = 0;
  if (!ConsumeInt(s, &epoch) || !ConsumePrefix(s, ", iteration ")) return false;
  if (!ConsumeInt(s, &iteration)) {
    ++out.malformed;
    return true;
  }
  size_t bar = s.find('|');
  if (bar == std::string_view::npos) return false;
  std::vector<std::pair<std::string, double>> fields;
  std::string_view rest = s.substr(bar + 1);
  int64_t step = iteration;
  double step_s = std::nan("");
  while (!rest.empty()) {
    std::string_view key, value_text;
    if (!NextField(rest, &key, &value_text)) continue;
    std::string name;
    SnakeCase(key, &name);
    double value = 0;
    if (name.empty() || !ParseDouble(value_text, &value)) continue;
    if (name == "global_step" && value >= 0 && value < 9e18) step = static_cast<int64_t>(value);
    if (name == "train_step_timing_in_s") step_s = value;
    fields.emplace_back(std::move(name), value);
  }
  double time_s = state.time_s;
  if (std::isfinite(step_s) && step_s >= 0) {
    int64_t steps = step > state.last_step ? step - state.last_step : (state.last_step == 0 && step == 0 ? 1 : 0);
    time_s += static_cast<double>(steps) * step_s;
    state.time_s = time_s;
    state.last_step = step;
    out.time_key = "train_step_timing in s";
  }
  for (auto& [k, v] : fields) AddPoint(out, step, time_s, std::move(k), v);
  state.current_step = step;
  return true;
}

}  // namespace

bool ParseLightningLine(std::string_view line, ParseOutput& out, ParserState& state) {
  bool recognized = false;
  for (std::string_view seg : Segments(line)) {
    if (ParseNemoIterationLine(seg, out, state)) {
      recognized = true;
      continue;
    }
    // "Epoch 3:  45%|████▌     | 45/100 [00:10<00:12,  4.50it/s, v_num=0, train_loss=2.34]"
    size_t at = seg.find("Epoch ");
    if (at == std::string_view::npos) continue;
    std::string_view s = seg.substr(at + 6);
    int64_t epoch = 0;
    if (!ConsumeInt(s, &epoch) || !ConsumePrefix(s, ":")) continue;
    auto bar = FindTqdmBar(s);
    if (!bar) continue;
    recognized = true;
    if (epoch != state.epoch) {
      if (state.epoch >= 0) {
        state.epoch_base_s += state.epoch_elapsed_s;
      } else {
        // First bar in this parser's life: go on from the stored axis.
        state.epoch_base_s = std::max(0.0, state.time_s - bar->elapsed_s);
      }
      state.epoch = epoch;
    }
    state.epoch_elapsed_s = bar->elapsed_s;
    std::vector<std::pair<std::string, double>> metrics;
    int64_t step = bar->total > 0 ? epoch * bar->total + bar->n : bar->n;
    for (std::string_view item : bar->postfix) {
      size_t eq = item.find('=');
      std::string name;
      SnakeCase(Trim(item.substr(0, eq)), &name);
      double value = 0;
      if (name.empty() || name == "v_num" || !ParseDouble(Trim(item.substr(eq + 1)), &value)) continue;
      // NeMo's postfix carries the optimizer step, which gradient accumulation sets apart from
      // the bar's batch count.
      if (name == "global_step" && value >= 0 && value < 9e18) step = static_cast<int64_t>(std::llround(value));
      metrics.emplace_back(std::move(name), value);
    }
    double time_s = state.epoch_base_s + bar->elapsed_s;
    if (time_s < state.time_s) time_s = state.time_s;  // a resumed run's bar starts again
    state.time_s = time_s;
    state.last_step = step;
    out.time_key = "progress bar elapsed";
    if (step != state.current_step) state.names_at_step.clear();
    state.current_step = step;
    // A bar is redrawn at one step many times (its postfix refreshed): each name once per step.
    for (auto& [k, v] : metrics) {
      if (std::find(state.names_at_step.begin(), state.names_at_step.end(), k) != state.names_at_step.end()) continue;
      state.names_at_step.push_back(k);
      AddPoint(out, step, time_s, std::move(k), v);
    }
  }
  return recognized;
}

bool ParseTorchtitanLine(std::string_view raw, ParseOutput& out, ParserState& state) {
  std::string clean = raw.find('\x1b') != std::string_view::npos ? StripAnsi(raw) : std::string();
  std::string_view line = clean.empty() ? raw : std::string_view(clean);
  size_t info = line.find("INFO - ");
  if (info == std::string_view::npos) return false;
  std::string_view s = SkipSpaces(line.substr(info + 7));
  std::string prefix;
  if (ConsumePrefix(s, "validate ")) prefix = "val_";
  if (!s.starts_with("step:")) return false;
  // "step:  1  loss:  8.1661  grad_norm:  3.6855  memory:  2.47GiB(3.12%)  tps: 3,502  mfu: 0.19%"
  std::vector<std::pair<std::string, double>> fields;
  int64_t step = -1;
  std::string key;
  while (true) {
    s = SkipSpaces(s);
    if (s.empty()) break;
    size_t end = 0;
    while (end < s.size() && !IsSpace(s[end])) ++end;
    std::string_view token = s.substr(0, end);
    s.remove_prefix(end);
    if (token.size() > 1 && token.back() == ':') {
      SnakeCase(token.substr(0, token.size() - 1), &key);
      continue;
    }
    if (key.empty()) continue;
    // Value: digits with thousands commas, then a unit, then "(3.12%)".
    std::string number;
    size_t i = 0;
    while (i < token.size() &&
           (IsDigit(token[i]) || token[i] == '.' || token[i] == ',' || token[i] == '-' || token[i] == '+' ||
            token[i] == 'e' || token[i] == 'E' || (number.empty() && (token[i] == 'n' || token[i] == 'i')))) {
      if (token[i] != ',') number.push_back(token[i]);
      ++i;
    }
    // nan/inf spelled out
    if (number.empty() || number == "n" || number == "i") {
      double v = 0;
      if (ParseDouble(token, &v)) fields.emplace_back(prefix + key, v);
      key.clear();
      continue;
    }
    double value = 0;
    if (!ParseDouble(number, &value)) {
      ++out.malformed;
      return true;
    }
    std::string_view unit = token.substr(i);
    std::string name = key;
    size_t paren = unit.find('(');
    std::string_view unit_main = unit.substr(0, paren);
    if (unit_main == "%") {
      name += "_pct";
    } else if (!unit_main.empty()) {
      std::string u;
      SnakeCase(unit_main, &u);
      if (!u.empty()) name += "_" + u;
    }
    if (key == "step") {
      if (value < 0 || value != std::floor(value)) {
        ++out.malformed;
        return true;
      }
      step = static_cast<int64_t>(value);
    } else {
      fields.emplace_back(prefix + name, value);
    }
    if (paren != std::string_view::npos) {
      std::string_view pct = unit.substr(paren + 1);
      size_t close = pct.find("%)");
      double p = 0;
      if (close != std::string_view::npos && ParseDouble(pct.substr(0, close), &p))
        fields.emplace_back(prefix + key + "_pct", p);
    }
    key.clear();
  }
  return AddClockedFields(line, step, fields, out, state);
}

namespace {

// "key=value" items of a DeepSpeed line, separated by ", " or "/": values keep their brackets.
std::optional<std::string_view> KeyValue(std::string_view line, std::string_view key) {
  size_t pos = 0;
  while ((pos = line.find(key, pos)) != std::string_view::npos) {
    bool boundary = pos == 0 || line[pos - 1] == ' ' || line[pos - 1] == ',' || line[pos - 1] == '/';
    size_t value = pos + key.size();
    if (boundary && value < line.size() && line[value] == '=') {
      std::string_view v = line.substr(value + 1);
      if (!v.empty() && v.front() == '[') {
        size_t close = v.find(']');
        return v.substr(0, close == std::string_view::npos ? v.size() : close + 1);
      }
      size_t end = v.find_first_of(",/ ");
      return v.substr(0, end);
    }
    pos = value;
  }
  return std::nullopt;
}

}  // namespace

bool ParseDeepSpeedLine(std::string_view line, ParseOutput& out, ParserState& state) {
  std::vector<std::pair<std::string, double>> fields;
  int64_t step = -1;
  auto number = [](std::string_view v, double* out) {
    v = Trim(v);
    if (v.ends_with("GB")) v.remove_suffix(2);
    if (!v.empty() && v.front() == '[') {  // lr=[4.99e-05, 4.99e-05]: one per parameter group
      v.remove_prefix(1);
      v = v.substr(0, v.find_first_of(",]"));
    }
    return ParseDouble(Trim(v), out);
  };
  if (line.find("RunningAvgSamplesPerSec=") != std::string_view::npos) {
    // "epoch=0/micro_step=40/global_step=10, RunningAvgSamplesPerSec=25.0, CurrSamplesPerSec=25.7,
    // MemAllocated=4.32GB, MaxMemAllocated=38.49GB"; older: "0/20, RunningAvgSamplesPerSec=...".
    double v = 0;
    if (auto g = KeyValue(line, "global_step"); g && number(*g, &v)) {
      step = static_cast<int64_t>(v);
    } else {
      size_t at = line.find(", RunningAvgSamplesPerSec=");
      size_t slash = at == std::string_view::npos ? at : line.rfind('/', at);
      std::string_view digits =
          slash == std::string_view::npos ? std::string_view() : line.substr(slash + 1, at - slash - 1);
      int64_t s = 0;
      if (ConsumeInt(digits, &s) && digits.empty()) step = s;
    }
    constexpr std::pair<std::string_view, std::string_view> kNames[] = {
        {"RunningAvgSamplesPerSec", "samples_per_s"},
        {"CurrSamplesPerSec", "curr_samples_per_s"},
        {"MemAllocated", "mem_allocated_gb"},
        {"MaxMemAllocated", "max_mem_allocated_gb"},
    };
    for (const auto& [key, name] : kNames) {
      auto text = KeyValue(line, key);
      if (!text) continue;
      if (!number(*text, &v)) {
        ++out.malformed;
        return true;
      }
      fields.emplace_back(std::string(name), v);
    }
  } else if (line.find("] step=") != std::string_view::npos && line.find("skipped=") != std::string_view::npos) {
    // "[Rank 0] step=10, skipped=4, lr=[4.99e-05, 4.99e-05], mom=[(0.9, 0.95), (0.9, 0.95)]"
    double v = 0;
    auto s = KeyValue(line, "step");
    if (!s || !number(*s, &v) || v < 0) {
      ++out.malformed;
      return true;
    }
    step = static_cast<int64_t>(v);
    if (auto k = KeyValue(line, "skipped"); k && number(*k, &v)) fields.emplace_back("skipped_iters", v);
    if (auto k = KeyValue(line, "lr"); k && number(*k, &v)) fields.emplace_back("learning_rate", v);
  } else {
    return false;
  }
  return AddClockedFields(line, step, fields, out, state);
}

void ParseRegexLine(std::string_view line, const std::vector<MetricRegex>& regexes, bool own_format, ParseOutput& out,
                    ParserState& state) {
  std::cmatch m;
  auto capture = [&](const MetricRegex& r, double* value) -> int {  // 0 no match, 1 value, -1 bad
    if (!std::regex_search(line.data(), line.data() + line.size(), m, *r.compiled)) return 0;
    std::string text = m[1].str();
    std::string digits;
    for (char c : text) {
      if (c != ',') digits.push_back(c);  // thousands separators
    }
    return ParseDouble(Trim(digits), value) ? 1 : -1;
  };
  if (own_format) {
    for (const MetricRegex& r : regexes) {
      if (r.name != "step") continue;
      double v = 0;
      int got = capture(r, &v);
      if (got < 0 || (got > 0 && (v < 0 || v >= 9e18))) ++out.malformed;
      if (got > 0 && v >= 0 && v < 9e18) state.current_step = static_cast<int64_t>(v);
    }
  }
  for (const MetricRegex& r : regexes) {
    if (r.name != "time_s") continue;
    double v = 0;
    int got = capture(r, &v);
    if (got < 0) ++out.malformed;
    if (got > 0 && std::isfinite(v) && v >= 0) {
      state.time_s = v;
      state.last_step = std::max<int64_t>(state.current_step, 0);
      out.time_key = "time_s (regex)";
    }
  }
  if (state.current_step < 0) return;  // nothing to place the values at yet
  for (const MetricRegex& r : regexes) {
    if (r.name == "step" || r.name == "time_s") continue;
    double v = 0;
    int got = capture(r, &v);
    if (got < 0) ++out.malformed;
    if (got > 0) AddPoint(out, state.current_step, state.time_s, r.name, v);
  }
}

MetricFormat DetectFormat(std::string_view line) {
  std::string_view t = Trim(line);
  if (t.starts_with("{\"")) return MetricFormat::kJsonLines;
  if (line.find("{'") != std::string_view::npos && line.find("':") != std::string_view::npos)
    return MetricFormat::kHuggingFace;
  if (line.find("RunningAvgSamplesPerSec=") != std::string_view::npos ||
      (line.find("] step=") != std::string_view::npos && line.find("skipped=") != std::string_view::npos))
    return MetricFormat::kDeepSpeed;
  if (line.find("INFO - ") != std::string_view::npos && line.find("step:") != std::string_view::npos &&
      line.find("loss:") != std::string_view::npos)
    return MetricFormat::kTorchtitan;
  if (line.find("Training epoch ") != std::string_view::npos && line.find('|') != std::string_view::npos)
    return MetricFormat::kLightning;
  if (line.find("Epoch ") != std::string_view::npos && line.find(" [") != std::string_view::npos &&
      (line.find("it/s") != std::string_view::npos || line.find("s/it") != std::string_view::npos ||
       line.find('=') != std::string_view::npos))
    return MetricFormat::kLightning;
  if (line.find("iteration") != std::string_view::npos && line.find('|') != std::string_view::npos &&
      (line.find("lm loss:") != std::string_view::npos ||
       line.find("elapsed time per iteration") != std::string_view::npos))
    return MetricFormat::kMegatron;
  return MetricFormat::kAuto;
}

}  // namespace sweep::logs
