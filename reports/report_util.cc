// Helpers the report renderers share; see report_util.h.
#include "reports/report_util.h"

#include <fmt/format.h>

namespace sweep::reports {

std::string FormatHours(double hours) { return hours >= 1000 ? fmt::format("{:.0f}", hours) : FormatSig(hours, 3); }

std::string FormatObjective(const std::optional<double>& value) {
  if (!value) return "–";
  if (std::isnan(*value)) return "NaN";
  return FormatSig(*value, 4);
}

std::string ParamsText(const StudyReport& r, const TrialSummary& t, std::string_view sep) {
  std::string s;
  for (size_t i = 0; i < r.meta.param_names.size(); ++i) {
    if (i) s.append(sep);
    s += r.meta.param_names[i] + "=" + (i < t.param_values.size() ? t.param_values[i].text : "");
  }
  return s.empty() ? t.key : s;
}

}  // namespace sweep::reports
