// `slurmsweep metrics LOGFILE`: what the run loop would store from a log (logs/log_summary.h),
// as text or as JSON (schema version 1, documented in the README), and whether the objective is in it.
// Layer cli/ (namespace sweep::cli): the command line; parses, calls run/ and results/, prints.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "logs/log_summary.h"

namespace sweep::cli {

struct MetricsCheck {
  std::string path;
  std::string format;     // "megatron", "jsonl", ..., "auto (jsonl)"
  std::string objective;  // the metric the study ranks by
  logs::LogSummary summary;
  // Set when the log gave no point in `format` and another format parses it (GuessLogFormat).
  std::optional<logs::FormatGuess> suggestion;

  bool objective_present() const;
  // " (did you mean 'x'?)" over the log's metric names, or "".
  std::string did_you_mean() const;
};

std::string RenderMetricsCheckText(const MetricsCheck& check);
std::string RenderMetricsCheckJson(const MetricsCheck& check);

}  // namespace sweep::cli
