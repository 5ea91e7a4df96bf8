// How much of a study the HTML report draws in full (html_report.h renders it).
// Module reports/: rendering plain data into reports; uses base/ only. A public header (the internal
// ones say "Internal to reports/").
#pragma once

#include <cstddef>

namespace sweep::reports {

struct HtmlOptions {
  size_t top_n = 20;       // ranking rows shown; the rest sit in a collapsed section
  size_t highlighted = 8;  // best-ranked curves drawn in colour (plus baseline), the others grey
  size_t throughput_bars = 30;
  // A study of more trials than this is drawn in detail for its best only (issue 42), so that the
  // page grows with what a reader can take in, not with the trials: the top_n ranked trials, the
  // recommendation and the baseline have their ranking rows, curves, dots and lines; the others
  // are aggregated (quantile bands of their curves, distributions by parameter value, counts), and
  // the report says so. trials.csv and metrics.csv keep every trial and point.
  size_t detail_limit = 200;
};

}  // namespace sweep::reports
