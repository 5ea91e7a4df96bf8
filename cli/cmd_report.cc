// `slurmsweep report` (one study's HTML report and CSV files) and `slurmsweep compare` (studies
// side by side). Both read the stores only.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <filesystem>

#include "base/atomic_file.h"
#include "cli/commands.h"
#include "results/compare.h"
#include "results/report_data.h"
#include "results/report_files.h"
#include "results/study_trials.h"
#include "reports/csv.h"

namespace sweep::cli {

void AddReportFlags(CLI::App* sub, App& app, ReportFlags& flags) {
  AddStudyArgument(sub, app);
  sub->add_option("--html", flags.html_path, "Write the self-contained HTML report to FILE")->type_name("FILE");
  sub->add_option("--csv", flags.csv_path,
                  "Write trials.csv, metrics.csv and importance.csv into DIR (a path ending in .csv: trials.csv "
                  "alone, to it)")
      ->type_name("DIR");
}

Status CmdReport(App& app, ReportFlags& flags) {
  SWEEP_RETURN_IF_ERROR(app.LoadStudyFile());
  // Neither given: both, where the run loop writes them ([report] html and csv_dir).
  if (flags.html_path.empty() && flags.csv_path.empty())
    flags.html_path = app.study.report.html, flags.csv_path = app.study.report.csv_dir;
  SWEEP_RETURN_IF_ERROR(app.OpenStore(true));
  auto rec = app.store->GetStudy(app.study.name);
  if (!rec.ok()) return rec.status().WithContext("nothing recorded yet for this study; run it first");
  // `--csv FILE.csv`, as this command took before metrics.csv existed: trials.csv alone, to that file.
  bool csv_file = flags.csv_path.ends_with(".csv") && !std::filesystem::is_directory(flags.csv_path);
  if (csv_file) {
    auto rows = results::CollectTrialRows(*app.store, app.study, rec->id, app.clock.Now());
    if (!rows.ok()) return rows.status();
    std::string csv = reports::RenderTrialsCsv(results::ParamNames(app.study), *rows);
    // Written beside, then renamed, so a reader never sees half a report.
    SWEEP_RETURN_IF_ERROR(WriteFileAtomically(flags.csv_path, csv));
    std::cout << fmt::format("wrote {} ({} trials)\n", flags.csv_path, rows->size());
  }
  std::string csv_dir = csv_file ? "" : flags.csv_path;
  if (flags.html_path.empty() && csv_dir.empty()) return Status::OK();
  SWEEP_RETURN_IF_ERROR(results::WriteReports(*app.store, app.study, rec->id, flags.html_path, csv_dir, app.clock.Now(),
                                              results::ReportOptionsFor(app.study)));
  if (!flags.html_path.empty()) std::cout << fmt::format("wrote {}\n", flags.html_path);
  if (!csv_dir.empty()) {
    std::cout << fmt::format("wrote {0}/trials.csv, {0}/metrics.csv and {0}/importance.csv\n", csv_dir);
  }
  return Status::OK();
}

void AddCompareFlags(CLI::App* sub, App&, CompareFlags& flags) {
  sub->add_option("studies", flags.study_paths, "Study files (TOML); the first is the reference")
      ->required()
      ->expected(2, 64)
      ->check(CLI::ExistingFile);
  sub->add_option("--html", flags.html_path, "Write the comparison as HTML to FILE (default compare-report.html)")
      ->type_name("FILE");
  sub->add_option("--csv", flags.csv_path, "Write compare.csv into DIR")->type_name("DIR");
  sub->add_option("--target", flags.target,
                  "Objective value to measure time to (default: the worst of the studies' best final values)")
      ->type_name("VALUE");
}

Status CmdCompare(App& app, CompareFlags& flags) {
  // Neither given: compare-report.html in the current directory.
  if (flags.html_path.empty() && flags.csv_path.empty()) flags.html_path = "compare-report.html";
  results::CompareOptions o;
  o.target = flags.target;
  o.version = SLURMSWEEP_VERSION;
  auto c = results::CollectComparison(flags.study_paths, o, app.clock.Now());
  if (!c.ok()) return c.status();
  SWEEP_RETURN_IF_ERROR(results::WriteComparison(*c, flags.html_path, flags.csv_path));
  if (!flags.html_path.empty()) std::cout << fmt::format("wrote {}\n", flags.html_path);
  if (!flags.csv_path.empty()) std::cout << fmt::format("wrote {}/compare.csv\n", flags.csv_path);
  return Status::OK();
}

}  // namespace sweep::cli
