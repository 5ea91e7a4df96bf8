// What a log parser keeps and returns: the running parser state and one chunk's output (what it
// is told, the format and the study's regular expressions, is base/metric_format.h).
// Shared by metrics_parser (the driver) and framework_logs (the frameworks' line parsers), so
// neither includes the other's header.
// Part of the module's face through metrics_parser.h, which includes it.
// Module logs/ (namespace sweep::logs): reading training logs; uses base/ only.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "base/metric_format.h"
#include "base/metric_point.h"

namespace sweep::logs {

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

}  // namespace sweep::logs
