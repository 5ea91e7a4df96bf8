// report_bench: how long the HTML report of a large study takes and how big it gets. Fills a
// temporary database with a synthetic study (default 1000 trials x 10k logged iterations, four
// metrics each) and times WriteReports on it, as the run loop calls it. Not a test: it prints.
//
//   build/bin/report_bench [--trials N] [--points N] [--csv] [--keep] [--db FILE]
// --keep leaves the temporary directory (database, report.html); --db reuses a kept database.
#include <fmt/format.h>
#include <stdlib.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>

#include "orchestrator/report_data.h"
#include "tests/synthetic_study.h"

namespace {

namespace fs = std::filesystem;
constexpr double kHtmlLimitBytes = 5e6;  // "a few MB": what an email attachment can carry

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

uintmax_t SizeOf(const fs::path& path) {
  std::error_code ec;
  uintmax_t size = 0;
  if (fs::is_directory(path)) {
    for (const auto& e : fs::recursive_directory_iterator(path)) size += e.is_regular_file() ? e.file_size() : 0;
  } else {
    size = fs::file_size(path, ec);
  }
  return size;
}

std::string Mb(uintmax_t bytes) { return fmt::format("{:.2f} MB", static_cast<double>(bytes) / 1e6); }

}  // namespace

int main(int argc, char** argv) {
  using namespace sweep;
  testing::SyntheticOptions options;
  options.trials = 1000;
  options.points = 10'000;
  bool csv = false, keep = false;
  std::string db;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--trials" && i + 1 < argc) options.trials = std::atoi(argv[++i]);
    else if (arg == "--points" && i + 1 < argc) options.points = std::atoi(argv[++i]);
    else if (arg == "--csv") csv = true;
    else if (arg == "--keep") keep = true;
    else if (arg == "--db" && i + 1 < argc) db = argv[++i];
    else {
      fmt::print(stderr, "usage: report_bench [--trials N] [--points N] [--csv] [--keep] [--db FILE]\n");
      return 2;
    }
  }

  std::string tmpl = (fs::temp_directory_path() / "report-bench-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return 1;
  fs::path dir = tmpl;
  bool fill = db.empty();
  if (fill) db = (dir / "bench.db").string();
  auto opened = store::Store::Open(db);
  if (!opened.ok()) {
    fmt::print(stderr, "report_bench: {}\n", opened.status().ToString());
    return 1;
  }
  std::unique_ptr<store::Store> store = std::move(opened.value());
  Study study = testing::SyntheticStudy();

  auto t0 = std::chrono::steady_clock::now();
  int64_t study_id = fill ? testing::FillSyntheticStudy(*store, study, options) : store->GetStudy(study.name)->id;
  double fill_s = Seconds(t0);
  int64_t rows = 0;
  auto trials = store->ListTrials(study_id);
  for (const auto& t : *trials) rows += *store->CountMetrics(t.id);
  fmt::print("report_bench: {} trials, {} metric rows in {}\n", trials->size(), rows, db);
  if (fill) fmt::print("  fill database     {:8.1f} s   ({})\n", fill_s, Mb(SizeOf(db)));

  ReportOptions report_options;
  report_options.version = "bench";
  fs::path html = dir / "report.html";
  t0 = std::chrono::steady_clock::now();
  Status st = WriteReports(*store, study, study_id, html.string(), "", options.now, report_options);
  double html_s = Seconds(t0);
  if (!st.ok()) {
    fmt::print(stderr, "report_bench: {}\n", st.ToString());
    return 1;
  }
  uintmax_t html_bytes = SizeOf(html);
  fmt::print("  HTML report       {:8.1f} s   {} = {:.2f} of the {} limit\n", html_s, Mb(html_bytes),
             static_cast<double>(html_bytes) / kHtmlLimitBytes, Mb(static_cast<uintmax_t>(kHtmlLimitBytes)));

  if (csv) {
    t0 = std::chrono::steady_clock::now();
    st = WriteReports(*store, study, study_id, "", (dir / "csv").string(), options.now, report_options);
    double csv_s = Seconds(t0);
    if (!st.ok()) {
      fmt::print(stderr, "report_bench: {}\n", st.ToString());
      return 1;
    }
    fmt::print("  trials.csv + metrics.csv {:4.1f} s   {}\n", csv_s, Mb(SizeOf(dir / "csv")));
  }

  store.reset();
  if (keep) {
    fmt::print("  kept {}\n", dir.string());
  } else {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  return 0;
}
