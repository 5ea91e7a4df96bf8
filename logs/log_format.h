// What a log parser is told and what it keeps and returns: the log formats and their names, a
// study's per-metric regular expressions, the running parser state and one chunk's output.
// Shared by metrics_parser (the driver) and framework_logs (the frameworks' line parsers), so
// neither includes the other's header.
// Module logs/: reading training logs; uses base/ only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "base/metric_point.h"

namespace sweep {

enum class MetricFormat {
  kMegatron,
  kJsonLines,
  kHuggingFace,  // Trainer's printed dicts ({'loss': 2.1, ...}), steps and time from its tqdm bar
  kLightning,    // PyTorch Lightning / NeMo progress bars, NeMo 2's "Training epoch E, iteration I/N | ..."
  kTorchtitan,   // "[titan] 2025-06-04 08:51:48,074 - root - INFO - step: 10  loss: 10.7069 ..."
  kDeepSpeed,    // the engine's "step=N, skipped=S, lr=[...]" and throughput-timer lines
  kRegex,        // only the study's [study.metric_regex] expressions
  kAuto,         // the first line that one of the formats above recognizes decides
};

// "megatron" | "jsonl" | "hf" | "lightning" ("nemo") | "torchtitan" | "deepspeed" | "regex" |
// "auto"; false if unknown.
bool ParseMetricFormat(std::string_view text, MetricFormat* out);
std::string_view MetricFormatName(MetricFormat format);
// The accepted names, for error messages.
inline constexpr std::string_view kMetricFormatNames =
    "\"megatron\", \"jsonl\", \"hf\", \"lightning\", \"nemo\", \"torchtitan\", \"deepspeed\", \"regex\" or \"auto\"";

// A metric the study reads with its own regular expression (ECMAScript syntax, searched in each
// line; the first capture group is the value). Name "step" gives the step (required with format
// "regex"), "time_s" seconds of training time; any other name is a metric, stored at the step of
// the line or else the last step seen.
struct MetricRegex {
  std::string name;
  std::string pattern;
  std::shared_ptr<const std::regex> compiled;
};

// Compiles `pattern`; the error says why it cannot be used (syntax, no capture group).
bool CompileMetricRegex(std::string name, std::string pattern, MetricRegex* out, std::string* error);

// How a study's logs are read: the format and extra regular expressions, applied to every line.
struct LogFormat {
  LogFormat(MetricFormat f = MetricFormat::kMegatron) : format(f) {}  // NOLINT: a bare format is a LogFormat
  MetricFormat format;
  std::vector<MetricRegex> regexes;
};

// Points are base/metric_point.h's MetricPoint; time_s is training time since the first logged
// iteration (see ParserState).

// The running time axis. Megatron logs "elapsed time per iteration (ms)" averaged over the
// log interval, so training time is the sum of (steps since last line) x (ms per step).
// Saved implicitly in the store (last step and its time) so a restarted orchestrator resumes it.
struct ParserState {
  int64_t last_step = 0;
  double time_s = 0;
  // Set after the head of an over-long line was consumed: the rest of that line, up to its
  // newline, is dropped by the next call. Not persisted: after a restart the tail is read as
  // one ordinary non-metric line.
  bool skipping_long_line = false;
  // The run's total iterations ("iteration 20/ 500"), once stored as metric train_iters.
  int64_t train_iters = 0;

  // Below: not persisted. After an orchestrator restart they are rebuilt from the next lines
  // (the time axis goes on from the stored last_step/time_s).
  MetricFormat detected = MetricFormat::kAuto;  // what "auto" settled on
  int64_t current_step = -1;                    // the step of the latest metric line
  // Hugging Face: its training bar ("500/1689 [01:30<03:29, ...]"), or records counted without one.
  int64_t bar_total = 0, bar_step = -1, records = 0;
  double bar_elapsed_s = -1;
  // Lightning: elapsed time restarts with each epoch's bar.
  int64_t epoch = -1;
  double epoch_base_s = 0, epoch_elapsed_s = 0;
  std::vector<std::string> names_at_step;  // emitted at current_step (a bar is redrawn often)
  // torchtitan/DeepSpeed: the log-line clock of the first metric line.
  std::optional<double> first_clock_s;
};

struct ParseOutput {
  std::vector<MetricPoint> points;
  // Megatron's "iteration 20/ 500": the run's total iterations as metric train_iters, when it
  // first shows in this parser's life or changes (the caller stores it with the points).
  std::optional<MetricPoint> train_iters;
  size_t consumed = 0;   // bytes of the chunk up to and including the last complete line
  size_t lines = 0;      // complete lines seen
  size_t malformed = 0;  // lines that looked like metric lines but could not be parsed
  // The key that gave the time axis in the last line that had one ("elapsed time per iteration
  // (ms)", jsonl's "time", "iter_time_ms", ...); empty if no line of the chunk had one.
  std::string_view time_key;
};

}  // namespace sweep
