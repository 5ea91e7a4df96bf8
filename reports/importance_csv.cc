// importance.csv from the report's analysis (ParamImportances, study_report.h), in csv.h's cells.
#include "reports/importance_csv.h"

#include <fmt/format.h>

#include <iterator>

#include "reports/csv.h"

namespace sweep::reports {

std::string RenderImportanceCsv(const StudyReport& report) {
  std::string out = "param,log,groups,epsilon2,share,trials,step\n";
  Importances imp = ParamImportances(report);
  if (!imp.why_none.empty()) return out;
  for (const ParamImportance& p : imp.params) {
    AppendCsvText(report.meta.param_names[p.param], out);
    bool log = p.param < report.meta.param_log.size() && report.meta.param_log[p.param];
    fmt::format_to(std::back_inserter(out), ",{},{},", log ? "true" : "false", p.groups);
    // Not estimable: empty cells, not a 0 that would read as "explains nothing".
    if (p.estimable) AppendCsvNumber(p.epsilon2, out);
    out.push_back(',');
    if (p.estimable) AppendCsvNumber(p.share, out);
    fmt::format_to(std::back_inserter(out), ",{},", imp.trials);
    if (imp.at_step) fmt::format_to(std::back_inserter(out), "{}", *imp.at_step);
    out.push_back('\n');
  }
  return out;
}

}  // namespace sweep::reports
