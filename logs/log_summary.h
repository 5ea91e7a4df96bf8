// What slurmsweep would store from a whole log, for `slurmsweep metrics`: a user checks their
// trainer's output before a sweep. Runs the run loop's parser (metrics_parser.h) line by line, so
// the answer is the run loop's, with line numbers for the lines it would count malformed.
// Module logs/ (namespace sweep::logs): reading training logs; uses base/ only. One of its four public
// headers (metrics_parser.h, log_summary.h, telemetry_parser.h, classify.h); the rest is internal.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "logs/metrics_parser.h"

namespace sweep::logs {

struct LogSummary {
  struct Metric {
    std::string name;
    int64_t count = 0;  // points stored
    int64_t first_step = 0, last_step = 0;
  };
  std::vector<Metric> metrics;  // by name; train_iters included when the log gives it
  int64_t lines = 0;            // complete lines
  int64_t points = 0;
  std::optional<int64_t> first_step, last_step;  // over all points
  std::string time_key;                  // the key that gave the time axis (the last one seen); empty: no time axis
  double last_time_s = 0;                // training time at the last timed step
  std::vector<int64_t> malformed_lines;  // 1-based
  // A last line without a line break: still being written, so the run loop does not read it yet.
  bool partial_last_line = false;
  // With format "auto": the format the first metric line matched (kAuto: none did).
  MetricFormat detected = MetricFormat::kAuto;
};

LogSummary SummarizeLog(std::string_view text, const LogFormat& format);

// SummarizeLog fed in pieces of any size, so a log of any size is read in bounded memory: a line
// is held only up to kMaxLineBytes; a longer one is skipped to its end and counted malformed, as
// the run loop's parser does.
class LogSummarizer {
 public:
  explicit LogSummarizer(const LogFormat& format) : format_(format) {}
  void Feed(std::string_view chunk);
  LogSummary Finish();

 private:
  void Line(std::string_view line);
  void Add(const MetricPoint& p);

  LogFormat format_;
  ParserState state_;
  LogSummary out_;
  std::map<std::string, LogSummary::Metric> by_name_;
  std::string pending_;    // the start of a line not ended yet, at most kMaxLineBytes
  bool overlong_ = false;  // the current line passed kMaxLineBytes: skipped to its end
};

// The format that reads points from `text` (complete lines), found as metric_format = "auto"
// finds it: what a log that yields nothing in the format it was given should be read as.
struct FormatGuess {
  MetricFormat format = MetricFormat::kAuto;
  int64_t points = 0;
  std::vector<std::string> names;  // the metrics it reads, by name
};
// nullopt when no known format recognizes a line of `text`.
std::optional<FormatGuess> GuessLogFormat(std::string_view text);

}  // namespace sweep::logs
