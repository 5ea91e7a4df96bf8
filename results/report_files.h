// Writing a study's report files: the HTML report, and trials.csv, metrics.csv and importance.csv,
// each replaced whole (base/atomic_file.h) so that a reader never sees half a file.
// Layer results/ (namespace sweep::results): stored trials into views; uses the store, study, planner, reports.
#pragma once

#include <string>

#include "base/status.h"
#include "results/report_data.h"
#include "store/store.h"
#include "study/study.h"

namespace sweep::results {

// Writes the HTML report to `html_path` and trials.csv and metrics.csv into `csv_dir` (created if
// missing); either may be empty, not both. Each file is written beside its final name (mode 0666
// less the umask, base/atomic_file.h) and renamed, so a reader (or a browser refreshing it) never sees half a file. The
// run loop calls this every few minutes; it reads each trial's metrics once.
Status WriteReports(store::Store& store, const study::Study& study, int64_t study_id, const std::string& html_path,
                    const std::string& csv_dir, double now, const ReportOptions& options = {});

}  // namespace sweep::results
