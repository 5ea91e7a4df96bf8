// What the first trials' logs say about the study's asks, while there is still time to act: an
// objective no trial logs stops submission (with the names the logs do have), and stopping rules
// over a log with no time axis are reported at once, not discovered after the sweep.
// Layer run/ (namespace sweep::run): pure logic (no I/O), fed by the run loop.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/metric_point.h"

namespace sweep::run {

class ObjectiveCheck {
 public:
  // `lines_needed`: metric lines (distinct logged steps) one trial must show before the verdict;
  // 0: only a trial's end decides. `time_rules`: some stopping rule needs a time axis.
  ObjectiveCheck(std::string objective, bool time_rules, int lines_needed)
      : objective_(std::move(objective)), time_rules_(time_rules), lines_needed_(lines_needed) {}

  // A trial already has the objective stored (a resumed run): nothing left to watch for it.
  void ObjectiveStored() { objective_seen_ = true; }
  // What one read of trial `trial`'s log yielded; `time_key` is the parser's time key ("" if none).
  void Saw(int64_t trial, std::string_view trial_key, const std::vector<MetricPoint>& points,
           std::string_view time_key);
  // The trial's job ended: whatever it logged is all it will log.
  void Ended(int64_t trial);

  // Non-empty once a trial has logged `lines_needed` metric lines (or ended with some) and no
  // trial has logged the objective: why, the names the log has, and the closest to the objective.
  std::string MissingObjective() const;
  // Non-empty, once, when time rules are on and a trial has logged `lines_needed` lines with no
  // time axis: what the rules cannot do and what the log needs. Later calls return "".
  std::string TakeNoTimeAxisWarning();

 private:
  struct Seen {
    std::string key;
    std::set<int64_t> steps;  // the first 1000
    bool ended = false;
    bool timed = false;
  };
  const Seen* Decisive() const;  // the first trial with enough lines (or an end), or nullptr

  std::string objective_;
  bool time_rules_;
  int lines_needed_;
  bool objective_seen_ = false;
  bool time_warned_ = false;
  std::set<std::string> names_;
  std::map<int64_t, Seen> trials_;
};

}  // namespace sweep::run
