// The one type of a logged metric point, shared by the log parser, the store, early stopping and
// the reports (none of which may depend on another for it). Uses nothing but the standard library.
#pragma once

#include <cstdint>
#include <string>

namespace sweep {

// One value of one metric at one iteration, as logged and as stored.
struct MetricPoint {
  int64_t step = 0;
  double time_s = 0;  // training time since the trial's first logged iteration (the parser's axis)
  std::string name;   // "lm_loss", "iter_time_ms", ...
  double value = 0;
};

// One point of one metric's curve (the metric is known from context).
struct CurvePoint {
  int64_t step = 0;
  double time_s = 0;  // training time axis
  double value = 0;
};

}  // namespace sweep
