// Helpers shared within reports/ (the HTML report's files, the comparison, the analysis): escaping,
// finiteness, and the number and parameter texts both HTML reports show. Internal to reports/
// (scripts/include-loops.py checks that no other folder includes it).
// Module reports/: rendering plain data into reports; uses base/ only.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "reports/html_text.h"
#include "reports/study_report.h"

namespace sweep::reports {

// The q-quantile (0..1) of sorted, non-empty values, interpolated between neighbours.
inline double Quantile(const std::vector<double>& sorted, double q) {
  double at = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(at);
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - static_cast<double>(lo));
}

// HtmlEscape, by the short name the renderers' many format calls use.
inline std::string Esc(std::string_view s) { return HtmlEscape(s); }

// Resource hours: three significant digits (a short CPU study costs thousandths of an hour), whole
// hours from 1000 on.
std::string FormatHours(double hours);

// "GPU-hours", or "CPU-hours" for a study without GPUs.
inline std::string HoursUnit(const StudyMeta& meta) { return meta.gpus_per_node > 0 ? "GPU-hours" : "CPU-hours"; }

// An objective value: four significant digits, "NaN" for a diverged trial, "–" for none.
std::string FormatObjective(const std::optional<double>& value);

// A trial's parameters, "lr=0.01, optimizer=adam" (its key when the study has no parameters).
std::string ParamsText(const StudyReport& r, const TrialSummary& t, std::string_view sep = ", ");

}  // namespace sweep::reports
