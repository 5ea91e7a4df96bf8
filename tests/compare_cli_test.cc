// `slurmsweep compare` through the built binary, on two study databases written with the store
// (compare only reads them): the same workload "on H100" and "on H200", the latter 1.25x faster
// per iteration with the same loss per step. Tagged [report][cli].
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <vector>

#include "store/store.h"
#include "tests/test_util.h"

using namespace sweep;

namespace {

std::pair<int, std::string> Shell(const std::string& cmd) { return testing::RunShell(cmd + " 2>&1"); }
const std::string kBinary = std::string(SLURMSWEEP_BINARY_DIR) + "/bin/slurmsweep";

// A study `name` in `dir` with two trials (micro_batch_size 1 and 2) that completed; iteration
// time `iter_ms` x (1 for mbs 2, 1.5 for mbs 1); loss per step the same curve for all.
std::string Study(const testing::TempDir& dir, const std::string& name, double iter_ms,
                  const std::string& objective = "mode = \"min\"") {
  std::string path =
      testing::WriteLocalStudyFile(dir, name, "OPT={{optimizer}}\ntrain --mbs {{micro_batch_size}} --opt \"$OPT\"",
                                   fmt::format("[objective]\n{}\n\n[space]\nmicro_batch_size = [1, 2]\noptimizer = {{ "
                                               "values = [\"<b>adam\"], text = true }}\n",
                                               objective));
  auto db = store::Store::Open(dir.file(name + ".db"));
  REQUIRE(db.ok());
  auto id = (*db)->UpsertStudy(name, path, "h", 1.0);
  REQUIRE(id.ok());
  std::vector<store::TrialRecord> trials(2);
  for (int i = 0; i < 2; ++i) {
    trials[i].trial_key = fmt::format("t-{}-{}", name, i);
    trials[i].params_json = fmt::format(R"({{"micro_batch_size": {}, "optimizer": "<b>adam"}})", i + 1);
    trials[i].state = "new";
  }
  REQUIRE((*db)->InsertTrialsIfAbsent(*id, trials).ok());
  auto stored = *(*db)->ListTrials(*id);
  for (int i = 0; i < 2; ++i) {
    double ms = iter_ms * (i == 0 ? 1.5 : 1.0);
    std::vector<store::MetricRow> rows;
    for (int k = 1; k <= 100; ++k) {
      int64_t step = 10 * k;
      double loss = 2 + 5.0 / (1 + 0.01 * step) + (i == 0 ? 0.05 : 0);
      rows.push_back({step, step * ms / 1000, "lm_loss", loss});
      rows.push_back({step, step * ms / 1000, "iter_time_ms", ms});
    }
    REQUIRE((*db)->AppendMetrics(stored[i].id, rows, 100).ok());
    stored[i].state = "completed";
    stored[i].started_at = 1000;
    stored[i].ended_at = 1000 + 1000 * ms / 1000;
    REQUIRE((*db)->UpdateTrial(stored[i]).ok());
  }
  return path;
}

}  // namespace

TEST_CASE("compare puts studies side by side and splits the gain as the single report does", "[report][cli]") {
  testing::TempDir a, b, out;
  std::string h100 = Study(a, "h100", 100), h200 = Study(b, "h200", 80);
  auto [rc, text] = Shell(fmt::format("{} compare {} {} --html {} --csv {}", kBinary, h100, h200,
                                      out.file("compare.html"), out.file("csv")));
  INFO(text);
  REQUIRE(rc == 0);
  CHECK_THAT(text, Catch::Contains("wrote " + out.file("compare.html")));
  std::string html = testing::ReadAll(out.file("compare.html"));
  // H200's best (mbs 2) against H100's best (mbs 2): x1.25 throughput, same steps: x1.25 sooner.
  CHECK(html.find("×1.25</div><div class=\"l\">throughput") != std::string::npos);
  CHECK(html.find("×1.00</div><div class=\"l\">convergence") != std::string::npos);
  CHECK(html.find("×1.25</div><div class=\"l\">time to target") != std::string::npos);
  CHECK(html.find("t-h100-1") != std::string::npos);
  CHECK(html.find("t-h200-1") != std::string::npos);
  // A parameter value from the database is escaped.
  CHECK(html.find("<b>adam") == std::string::npos);
  CHECK(html.find("&lt;b&gt;adam") != std::string::npos);
  CHECK(html.find("http-equiv=\"Content-Security-Policy\"") != std::string::npos);

  std::string csv = testing::ReadAll(out.file("csv/compare.csv"));
  auto lines = [&] {
    std::vector<std::string> v;
    size_t at = 0;
    while (at < csv.size()) {
      size_t nl = csv.find('\n', at);
      v.push_back(csv.substr(at, nl - at));
      at = nl + 1;
    }
    return v;
  }();
  REQUIRE(lines.size() == 3);
  CHECK(lines[0].starts_with("study,study_file,best_trial,configuration,final_objective,"));
  CHECK(lines[1].starts_with("h100,"));
  CHECK(lines[2].starts_with("h200,"));
  // The last four columns: throughput, convergence, time-to-target and cost factors.
  std::vector<double> cells;
  for (size_t at = 0, comma; (comma = lines[2].find(',', at)) != std::string::npos || at < lines[2].size();) {
    std::string cell = lines[2].substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    cells.push_back(cell.empty() || !std::isdigit(static_cast<unsigned char>(cell[0])) ? NAN : std::stod(cell));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  REQUIRE(cells.size() >= 17);  // the quoted configuration holds a comma
  size_t n = cells.size();
  CHECK(cells[n - 4] == Approx(1.25));
  CHECK(cells[n - 3] == Approx(1.0));
  CHECK(cells[n - 2] == Approx(1.25));
  CHECK(cells[n - 1] == Approx(1.25));
}

TEST_CASE("compare refuses studies whose objectives differ, naming both files", "[report][cli]") {
  testing::TempDir a, b;
  std::string h100 = Study(a, "h100", 100), acc = Study(b, "acc", 80, "mode = \"max\"");
  auto [rc, text] = Shell(fmt::format("{} compare {} {}", kBinary, h100, acc));
  INFO(text);
  CHECK(rc == 2);
  CHECK_THAT(text, Catch::Contains(h100));
  CHECK_THAT(text, Catch::Contains(acc));
  CHECK_THAT(text, Catch::Contains("must share the objective"));
  // One study alone is refused by the command line.
  auto [rc1, text1] = Shell(fmt::format("{} compare {}", kBinary, h100));
  CHECK(rc1 == 2);
}

TEST_CASE("compare --target measures every study's time to that value", "[report][cli]") {
  testing::TempDir a, b, out;
  std::string h100 = Study(a, "h100", 100), h200 = Study(b, "h200", 80);
  auto [rc, text] = Shell(fmt::format("{} compare {} {} --target 2.5 --csv {}", kBinary, h100, h200, out.file("csv")));
  INFO(text);
  REQUIRE(rc == 0);
  CHECK_THAT(text, Catch::Contains("wrote " + out.file("csv") + "/compare.csv"));
  CHECK_THAT(text, !Catch::Contains(".html"));  // --csv alone: no HTML
  std::string csv = testing::ReadAll(out.file("csv/compare.csv"));
  // Loss 2 + 5 / (1 + 0.01 step), smoothed over 10 points of 10 steps: at or below 2.5 from step 950,
  // crossing it 58% of the way from step 940 (2.5026) to 950 (2.4981): at step 946.
  CHECK(csv.find(",946,") != std::string::npos);
}
