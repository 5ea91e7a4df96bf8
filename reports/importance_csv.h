// importance.csv: how much of the objective's spread each parameter explains, for spreadsheets.
// Module reports/: rendering plain data into reports; uses base/ only. A public header (the internal
// ones say "Internal to reports/").
#pragma once

#include <string>

#include "reports/study_report.h"

namespace sweep::reports {

// importance.csv (version 2): param,log,groups,epsilon2,share,trials,step, one row per parameter,
// largest share first (reports::ParamImportances); only the header when there are too few trials;
// epsilon2 and share empty for a parameter that is not estimable (its groups cannot carry it);
// step: the step every trial was compared at when trials stopped early are compared (empty: the
// completed trials' final values). Version 1 had no step column.
std::string RenderImportanceCsv(const StudyReport& report);

}  // namespace sweep::reports
