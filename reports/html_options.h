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
};

}  // namespace sweep::reports
