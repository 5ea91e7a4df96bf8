// How a study's training logs are to be read: the log formats and their names, and the study's
// per-metric regular expressions. The study file (study/) fills it in; the parsers (logs/) follow
// it. Vocabulary shared by both, so neither module depends on the other.
// Module base/: uses the standard library only.
#pragma once

#include <memory>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

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

}  // namespace sweep
