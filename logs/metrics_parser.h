// Parsing of training logs into metric points: Megatron-LM iteration lines and JSON lines.
// Works on raw chunks read from a byte offset; only complete lines are consumed, so a line
// cut by a read boundary (or still being written) is parsed once it is whole.
// Module logs/: reading training logs; uses base/ only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/metric_point.h"

namespace sweep {

enum class MetricFormat { kMegatron, kJsonLines };

// "megatron" | "jsonl"; false if unknown.
bool ParseMetricFormat(std::string_view text, MetricFormat* out);

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

// Parses the complete lines of `chunk`. Lines that are not metric lines (start-up banners,
// warnings) are skipped silently; metric-looking lines that fail to parse are counted in
// `malformed`, never fatal. Lines longer than kMaxLineBytes are skipped and counted malformed.
ParseOutput ParseMetrics(std::string_view chunk, MetricFormat format, ParserState& state);

inline constexpr size_t kMaxLineBytes = 1 << 20;

}  // namespace sweep
