// ReportRefresher: the latest report is always on disk during a multi-day study. The HTML every
// [report] refresh_minutes, written by a thread of its own over a read-only connection
// (study.database), so a large study's report never stalls the ticks; a refresh due while the
// previous one is still being written is skipped. The final one (HTML and CSV) waits for it, then
// writes in the loop's thread. A report that cannot be written is logged; it never stops the sweep.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#include "base/status.h"
#include "run/run_context.h"
#include "store/store.h"

namespace sweep::run {

class ReportRefresher {
 public:
  explicit ReportRefresher(RunContext& ctx) : ctx_(ctx) {}
  // Waits for a refresh still being written.
  ~ReportRefresher();
  ReportRefresher(const ReportRefresher&) = delete;
  ReportRefresher& operator=(const ReportRefresher&) = delete;

  // What a background refresh writes, over its own read-only connection; default WriteReports of the
  // study's HTML. Tests replace it to hold a refresh open while the loop ticks on.
  using Writer = std::function<Status(store::Store& db, double now)>;
  void set_writer(Writer writer) { writer_ = std::move(writer); }

  // Whether a background refresh is due (the first on the first tick).
  bool Due() const;
  // `final`: HTML and CSV now, in this thread; else the HTML in the background.
  void Refresh(bool final);

 private:
  // Logs a background refresh that failed, once it has finished (events are the loop thread's).
  void LogBackground();

  RunContext& ctx_;
  double last_ = 0;
  std::thread thread_;
  Writer writer_;
  std::atomic<bool> running_{false};
  std::mutex mu_;
  std::optional<Status> result_;  // of the last background refresh, until logged
};

}  // namespace sweep::run
