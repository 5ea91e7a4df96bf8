// Writing a study's report files; see report_files.h.
#include "results/report_files.h"

#include <fmt/format.h>

#include <filesystem>
#include <memory>

#include "base/atomic_file.h"
#include "reports/csv.h"
#include "reports/importance_csv.h"
#include "reports/html_report.h"
#include "reports/config_ranking.h"

namespace sweep::results {

namespace fs = std::filesystem;

Status WriteReports(store::Store& store, const study::Study& study, int64_t study_id, const std::string& html_path,
                    const std::string& csv_dir, double now, const ReportOptions& options) {
  if (html_path.empty() && csv_dir.empty()) return Status::InvalidArgument("no report file asked for");
  std::unique_ptr<AtomicFile> metrics_csv;
  MetricsSink sink;
  std::string buffer;
  if (!csv_dir.empty()) {
    std::error_code ec;
    fs::create_directories(csv_dir, ec);
    if (ec) return Status::IOError(fmt::format("cannot create {}: {}", csv_dir, ec.message()));
    metrics_csv = std::make_unique<AtomicFile>((fs::path(csv_dir) / "metrics.csv").string());
    if (!metrics_csv->ok()) return metrics_csv->status();
    buffer = reports::MetricsCsvHeader();
    // Streamed trial by trial: a large study has more points than we want in memory as text.
    sink = [&](const store::TrialRecord& t, const std::vector<store::MetricColumns>& metrics) {
      // Metric by metric, each in step order (the order Store::Metrics gives).
      for (const store::MetricColumns& c : metrics) {
        for (size_t i = 0; i < c.steps.size(); ++i) {
          reports::AppendMetricsCsvRow(t.id, t.trial_key, c.steps[i], c.times[i], c.name, c.values[i], buffer);
        }
      }
      if (buffer.size() > (1 << 20)) {
        metrics_csv->Append(buffer);
        buffer.clear();
        if (!metrics_csv->ok()) return metrics_csv->status();
      }
      return Status::OK();
    };
  }
  auto c = CollectReportData(store, study, study_id, options, now, sink);
  if (!c.ok()) return c.status();

  if (metrics_csv) {
    metrics_csv->Append(buffer);
    AtomicFile trials_csv((fs::path(csv_dir) / "trials.csv").string());
    trials_csv.Append(reports::RenderTrialsCsv(c->report.meta.param_names, c->rows));
    SWEEP_RETURN_IF_ERROR(trials_csv.Commit());
    AtomicFile importance_csv((fs::path(csv_dir) / "importance.csv").string());
    importance_csv.Append(reports::RenderImportanceCsv(c->report));
    SWEEP_RETURN_IF_ERROR(importance_csv.Commit());
    if (c->report.configs) {
      AtomicFile configs_csv((fs::path(csv_dir) / "configs.csv").string());
      configs_csv.Append(reports::RenderConfigsCsv(*c->report.configs, c->rows));
      SWEEP_RETURN_IF_ERROR(configs_csv.Commit());
    }
    SWEEP_RETURN_IF_ERROR(metrics_csv->Commit());
  }
  if (!html_path.empty()) {
    AtomicFile html(html_path);
    html.Append(reports::RenderHtmlReport(c->report, options.html));
    SWEEP_RETURN_IF_ERROR(html.Commit());
  }
  return Status::OK();
}

}  // namespace sweep::results
