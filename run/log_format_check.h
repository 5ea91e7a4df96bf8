// The invariant behind metric_format: once a trial's log has lines, it yields points, or the study
// stops submitting. A log read in the wrong format otherwise stores nothing, silently: early
// stopping has nothing to go on, the objective check counts parsed lines and so never trips, and
// every trial runs to its end for no result. The verdict names the format the auto-detector finds
// in the lines (logs/log_summary.h GuessLogFormat), so the fix is one line of the study file.
// Decided as soon as the lines parse in another format; otherwise when a trial ends completed (or
// at its time limit) with lines and no point: a crash before the first metric line yields nothing
// either, and is the failure watch's (failure_storm.h), not this one's.
// Layer run/ (namespace sweep::run): pure logic (no I/O), fed by the run loop.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "base/metric_format.h"
#include "logs/log_summary.h"

namespace sweep::run {

class LogFormatCheck {
 public:
  explicit LogFormatCheck(MetricFormat configured) : configured_(configured) {}

  // What one read of trial `trial`'s log gave: its complete lines and the points parsed from them.
  void Saw(int64_t trial, std::string_view trial_key, std::string_view lines, size_t line_count, size_t points);
  // The store already has points of the trial (a resumed run): it yields.
  void Yielded(int64_t trial);
  // The trial's attempt ended in `state`; whatever it logged is all it will log.
  void Ended(int64_t trial, std::string_view state);
  // A new attempt starts from scratch.
  void Forget(int64_t trial) { trials_.erase(trial); }

  struct Verdict {
    std::string trial_key;
    int64_t lines = 0;
    std::optional<logs::FormatGuess> guess;  // the format that parses the lines, if one does
    std::string head;                        // the log's first non-empty lines, each after "\n    "
  };
  // Set once a trial's log has lines that parse in another format, or it ended completed or
  // timed out with lines and no point.
  std::optional<Verdict> Check() const;
  // The message for `v` (its head aside): what was read, in which format, and the format that parses it.
  std::string Describe(const Verdict& v) const;

 private:
  static constexpr size_t kSampleBytes = 64 << 10;  // enough lines to detect a format, little memory
  struct Seen {
    std::string key;
    int64_t lines = 0;
    bool yielded = false;
    bool ended_quiet = false;  // ended completed or timeout
    std::string sample;        // the first lines read, while nothing was yielded
    std::optional<logs::FormatGuess> guess;
  };
  MetricFormat configured_;
  std::map<int64_t, Seen> trials_;
};

}  // namespace sweep::run
