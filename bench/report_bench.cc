// report_bench: what `status` and the reports of a large study cost, against references measured
// in the same run on the same database. Fills a temporary database with a synthetic study (default
// 1000 trials x 10k logged iterations, four metrics each) and times, in paired rounds:
//   raw read   every metric row read with the bare sqlite3 API (a minimal C program's loop): the
//              reference of what reading the points costs;
//   status     CollectTrialRows, the table `slurmsweep status` prints: target at most 0.05 of the
//              raw read, whatever the points per trial;
//   HTML       WriteReports of report.html, as the run loop refreshes it: target at most 1 s and 5 MB;
//   CSV        (--csv) WriteReports of trials.csv + metrics.csv against the sqlite3 shell exporting
//              the same rows with `.mode csv`: target a rate at least 0.8 of the shell's.
// Ratios are medians over the rounds of each round's ratio. Not a test: it prints.
//
//   build/bin/report_bench [--trials N] [--points N] [--rounds N] [--csv] [--keep] [--db FILE] [--no-raw]
// --no-raw skips the raw read (to profile the reads alone: the ratios are then to 1 s).
// --keep leaves the temporary directory (database, report.html); --db reuses a kept database. The
// directory is made under $TMPDIR (TMPDIR=/dev/shm keeps the disk out of it).
#include <fmt/format.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "reports/html_report.h"
#include "results/report_data.h"
#include "results/report_files.h"
#include "tests/synthetic_study.h"

namespace {

namespace fs = std::filesystem;
constexpr double kHtmlLimitBytes = 5e6;  // "a few MB": what an email attachment can carry
constexpr double kHtmlLimitS = 1.0;
constexpr double kStatusLimit = 0.05;  // of the raw read
constexpr double kCsvLimit = 0.8;      // of the sqlite3 shell's rate

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

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

[[noreturn]] void Fail(const std::string& what) {
  fmt::print(stderr, "report_bench: {}\n", what);
  std::exit(1);
}

// Every metric row, every column read, as a minimal C program would: the reference. Returns rows.
int64_t RawRead(const std::string& db_path, double* seconds) {
  auto t0 = std::chrono::steady_clock::now();
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    Fail(db_path + ": " + sqlite3_errmsg(db));
  }
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT trial_id, name_id, step, time_s, value FROM metrics", -1, &stmt, nullptr) !=
      SQLITE_OK) {
    Fail(sqlite3_errmsg(db));
  }
  int64_t rows = 0;
  double sum = 0;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    sum += static_cast<double>(sqlite3_column_int64(stmt, 0) + sqlite3_column_int64(stmt, 1) +
                               sqlite3_column_int64(stmt, 2)) +
           sqlite3_column_double(stmt, 3) + sqlite3_column_double(stmt, 4);
    ++rows;
  }
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  *seconds = Seconds(t0);
  if (sum == 0.123) fmt::print("");  // keeps the reads
  return rows;
}

// The sqlite3 shell's `.mode csv` export of metrics.csv's rows (same columns, same join).
double ShellCsv(const std::string& db_path, const fs::path& out) {
  std::string cmd = fmt::format(
      "sqlite3 -readonly -batch -csv '{}' 'SELECT m.trial_id, t.trial_key, m.step, m.time_s, n.name, m.value "
      "FROM metrics m JOIN trials t ON t.id = m.trial_id JOIN metric_names n ON n.id = m.name_id' > '{}'",
      db_path, out.string());
  auto t0 = std::chrono::steady_clock::now();
  if (std::system(cmd.c_str()) != 0) Fail("failed: " + cmd);
  return Seconds(t0);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace sweep;
  testing::SyntheticOptions options;
  options.trials = 1000;
  options.points = 10'000;
  bool csv = false, keep = false, no_raw = false;  // --no-raw: the reads alone, to profile them (ratios meaningless)
  int rounds = 3;
  std::string db;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--trials" && i + 1 < argc) options.trials = std::atoi(argv[++i]);
    else if (arg == "--points" && i + 1 < argc) options.points = std::atoi(argv[++i]);
    else if (arg == "--rounds" && i + 1 < argc) rounds = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--csv") csv = true;
    else if (arg == "--keep") keep = true;
    else if (arg == "--no-raw") no_raw = true;
    else if (arg == "--db" && i + 1 < argc) db = argv[++i];
    else {
      fmt::print(
          stderr,
          "usage: report_bench [--trials N] [--points N] [--rounds N] [--csv] [--keep] [--db FILE] [--no-raw]\n");
      return 2;
    }
  }

  std::string tmpl = (fs::temp_directory_path() / "report-bench-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) return 1;
  fs::path dir = tmpl;
  bool fill = db.empty();
  if (fill) db = (dir / "bench.db").string();
  auto opened = store::Store::Open(db);
  if (!opened.ok()) Fail(opened.status().ToString());
  std::unique_ptr<store::Store> store = std::move(opened.value());
  study::Study study = testing::SyntheticStudy();

  auto t0 = std::chrono::steady_clock::now();
  int64_t study_id = fill ? testing::FillSyntheticStudy(*store, study, options) : store->GetStudy(study.name)->id;
  double fill_s = Seconds(t0);
  auto trials = store->ListTrials(study_id);
  if (!trials.ok()) Fail(trials.status().ToString());
  fmt::print("report_bench: {} trials in {}\n", trials->size(), db);
  if (fill) fmt::print("  fill database     {:8.1f} s   ({})\n", fill_s, Mb(SizeOf(db)));
  store.reset();
  // What `status` and `report` open: a read-only connection.
  auto reader = store::Store::OpenReadOnly(db);
  if (!reader.ok()) Fail(reader.status().ToString());

  results::ReportOptions report_options;
  report_options.version = "bench";
  fs::path html = dir / "report.html";
  std::vector<double> raw_s, status_s, html_s, status_ratio, html_ratio, csv_s, shell_s, csv_ratio, read_s, render_s;
  int64_t rows = 0;
  size_t status_rows = 0;
  for (int round = 0; round < rounds; ++round) {
    fmt::print("round {} of {} ...\n", round + 1, rounds);
    std::fflush(stdout);
    double raw = 0;
    if (no_raw) raw = 1;
    else rows = RawRead(db, &raw);
    t0 = std::chrono::steady_clock::now();
    auto table = results::CollectTrialRows(**reader, study, study_id, options.now, study.objective.metric);
    double status = Seconds(t0);
    if (!table.ok()) Fail(table.status().ToString());
    status_rows = table->size();
    t0 = std::chrono::steady_clock::now();
    Status st = results::WriteReports(**reader, study, study_id, html.string(), "", options.now, report_options);
    double h = Seconds(t0);
    if (!st.ok()) Fail(st.ToString());
    // The HTML report's two halves, apart: reading the store (CollectReport) and rendering the page.
    t0 = std::chrono::steady_clock::now();
    auto collected = results::CollectReport(**reader, study, study_id, report_options, options.now);
    if (!collected.ok()) Fail(collected.status().ToString());
    read_s.push_back(Seconds(t0));
    t0 = std::chrono::steady_clock::now();
    std::string page = reports::RenderHtmlReport(*collected, report_options.html);
    render_s.push_back(Seconds(t0));
    raw_s.push_back(raw);
    status_s.push_back(status);
    html_s.push_back(h);
    status_ratio.push_back(status / raw);
    html_ratio.push_back(h / raw);
    if (csv) {
      fs::path csv_dir = dir / "csv";
      auto ours = [&] {
        t0 = std::chrono::steady_clock::now();
        Status s = results::WriteReports(**reader, study, study_id, "", csv_dir.string(), options.now, report_options);
        if (!s.ok()) Fail(s.ToString());
        csv_s.push_back(Seconds(t0));
      };
      auto shell = [&] { shell_s.push_back(ShellCsv(db, dir / "shell.csv")); };
      if (round % 2 == 0) ours(), shell();
      else shell(), ours();
      // Same rows, so the rate ratio is the time ratio: shell time / ours.
      csv_ratio.push_back(shell_s.back() / csv_s.back());
    }
  }
  uintmax_t html_bytes = SizeOf(html);
  fmt::print("  metric rows       {:>10}\n", rows);
  fmt::print("  raw read          {:8.2f} s   (median of {}; {:.2f} M rows/s)\n", Median(raw_s), rounds,
             static_cast<double>(rows) / Median(raw_s) / 1e6);
  fmt::print("  status table      {:8.3f} s   ({} trials) = {:.4f} of the raw read (target <= {}: {})\n",
             Median(status_s), status_rows, Median(status_ratio), kStatusLimit,
             Median(status_ratio) <= kStatusLimit ? "met" : "NOT met");
  fmt::print("  HTML report       {:8.3f} s   = {:.2f} of the {:.0f} s limit ({}), {:.4f} of the raw read\n",
             Median(html_s), Median(html_s) / kHtmlLimitS, kHtmlLimitS,
             Median(html_s) <= kHtmlLimitS ? "met" : "NOT met", Median(html_ratio));
  fmt::print("    of which        {:8.3f} s reading the store (CollectReport), {:.3f} s rendering\n", Median(read_s),
             Median(render_s));
  fmt::print("  HTML size         {:>10}   = {:.2f} of the {} limit ({})\n", Mb(html_bytes),
             static_cast<double>(html_bytes) / kHtmlLimitBytes, Mb(static_cast<uintmax_t>(kHtmlLimitBytes)),
             static_cast<double>(html_bytes) <= kHtmlLimitBytes ? "met" : "NOT met");
  if (csv) {
    fmt::print("  trials.csv + metrics.csv {:5.2f} s   ({}); sqlite3 .mode csv {:.2f} s ({})\n", Median(csv_s),
               Mb(SizeOf(dir / "csv")), Median(shell_s), Mb(SizeOf(dir / "shell.csv")));
    fmt::print("  metrics.csv rate / sqlite3's: {:.2f} (target >= {}: {})\n", Median(csv_ratio), kCsvLimit,
               Median(csv_ratio) >= kCsvLimit ? "met" : "NOT met");
  }

  reader->reset();
  if (keep) {
    fmt::print("  kept {}\n", dir.string());
  } else {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  return 0;
}
