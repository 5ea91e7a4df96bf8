// The run's report, refreshed in the background; see report_refresher.h.
#include "run/report_refresher.h"

#include <fmt/format.h>

#include <utility>

#include "results/report_files.h"

namespace sweep::run {

ReportRefresher::~ReportRefresher() {
  if (thread_.joinable()) thread_.join();
}

bool ReportRefresher::Due() const { return ctx_.clock.Now() - last_ >= ctx_.study.report.refresh_minutes * 60; }

void ReportRefresher::Refresh(bool final) {
  const study::Study& study = ctx_.study;
  last_ = ctx_.clock.Now();
  if (!final) {
    LogBackground();
    if (running_) return;  // the previous refresh is still being written
    if (thread_.joinable()) thread_.join();
    running_ = true;
    thread_ = std::thread(
        [this, &study, study_id = ctx_.study_id, now = ctx_.clock.Now(), options = results::ReportOptionsFor(study)] {
          // A connection of its own: a Store is used by one thread (store.h), and WAL lets it read
          // while the loop writes.
          Status st;
          auto db = store::Store::OpenReadOnly(study.database);
          if (!db.ok()) st = db.status();
          else if (writer_) st = writer_(**db, now);
          else st = results::WriteReports(**db, study, study_id, study.report.html, "", now, options);
          {
            std::lock_guard<std::mutex> lock(mu_);
            result_ = std::move(st);
          }
          running_ = false;
        });
    return;
  }
  if (thread_.joinable()) thread_.join();
  LogBackground();
  Status st = results::WriteReports(ctx_.store, study, ctx_.study_id, study.report.html, study.report.csv_dir,
                                    ctx_.clock.Now(), results::ReportOptionsFor(study));
  if (!st.ok()) {
    ctx_.Event(std::nullopt, "report_failed", "could not write the report: " + st.ToString());
  } else {
    ctx_.Event(std::nullopt, "report", fmt::format("report: {} and {}/", study.report.html, study.report.csv_dir));
  }
}

void ReportRefresher::LogBackground() {
  std::optional<Status> result;
  {
    std::lock_guard<std::mutex> lock(mu_);
    result = std::exchange(result_, std::nullopt);
  }
  if (result && !result->ok()) {
    ctx_.Event(std::nullopt, "report_failed", "could not write the report: " + result->ToString());
  }
}

}  // namespace sweep::run
