// ReportRefresher: a background refresh when due, none stacked on one still being written, its
// failure logged by the loop's thread, and the final report written after it.
#include "run/report_refresher.h"

#include <catch2/catch.hpp>

#include <condition_variable>
#include <filesystem>
#include <mutex>

#include "tests/fake_run.h"

namespace sweep::run {
namespace {

using testing::FakeRun;

TEST_CASE("report refresher: due every refresh_minutes; a failed background refresh is logged, then the final one",
          "[report_refresher]") {
  FakeRun run("", "[space]\nlr = [0.1]\n\n[report]\nrefresh_minutes = 1\n");
  ReportRefresher reports(run.ctx());
  int written = 0;
  reports.set_writer([&](store::Store&, double) {
    ++written;
    return Status::IOError("disk full (injected)");
  });
  CHECK(reports.Due());  // the first on the first tick
  reports.Refresh(/*final=*/false);
  CHECK_FALSE(reports.Due());
  run.clock.Advance(59);
  CHECK_FALSE(reports.Due());
  run.clock.Advance(1);
  CHECK(reports.Due());
  reports.Refresh(/*final=*/true);  // waits for the background one, logs its failure, writes HTML and CSV
  CHECK(written == 1);
  REQUIRE(run.Count("report_failed") == 1);
  CHECK_THAT(run.events[0].message, Catch::Contains("disk full (injected)"));
  CHECK(run.Count("report") == 1);
  CHECK(std::filesystem::exists(run.study().report.html));
}

TEST_CASE("report refresher: a refresh due while the previous one is being written is skipped", "[report_refresher]") {
  FakeRun run("", "[space]\nlr = [0.1]\n");
  ReportRefresher reports(run.ctx());
  std::mutex mu;
  std::condition_variable cv;
  bool released = false;
  int written = 0;
  reports.set_writer([&](store::Store&, double) {
    std::unique_lock<std::mutex> lock(mu);
    ++written;
    cv.wait(lock, [&] { return released; });
    return Status::OK();
  });
  reports.Refresh(false);
  reports.Refresh(false);  // the first is held: not stacked
  {
    std::lock_guard<std::mutex> lock(mu);
    released = true;
  }
  cv.notify_all();
  reports.Refresh(true);
  CHECK(written == 1);
  CHECK(run.Count("report_failed") == 0);
}

}  // namespace
}  // namespace sweep::run
