// `slurmsweep compare A.toml B.toml ...`: reads each study's database (read-only, safe while a run
// writes), collects its report against one target common to all, and writes the comparison
// (reports/compare_report.h) as HTML and compare.csv.
// Layer results/ (namespace sweep::results): stored trials into views; uses the store, study, planner, reports.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "reports/compare_report.h"

namespace sweep::results {

struct CompareOptions {
  // Objective value every study's time to target is measured to. Default: the worst of the
  // studies' best final values (reports::CommonTarget), which every study's best reaches.
  std::optional<double> target;
  std::string version;
};

// Fails, naming the files, when a study cannot be loaded or has no database yet, or when the
// studies do not share the objective (metric and direction): times to different targets do
// not compare.
Result<reports::Comparison> CollectComparison(const std::vector<std::string>& study_paths,
                                              const CompareOptions& options, double now);

// Writes the HTML to `html_path` and compare.csv into `csv_dir` (created if missing), each
// atomically; either may be empty, not both.
Status WriteComparison(const reports::Comparison& comparison, const std::string& html_path, const std::string& csv_dir);

}  // namespace sweep::results
