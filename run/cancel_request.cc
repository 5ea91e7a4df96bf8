// Cancel requests between `cancel` and a run going on; see cancel_request.h.
#include "run/cancel_request.h"

#include <algorithm>

namespace sweep::run {

Result<int64_t> LastCancelRequest(store::Store& store, const std::string& study_name) {
  auto study = store.GetStudy(study_name);
  if (!study.ok()) return int64_t{0};
  auto requests = store.EventsAfter(study->id, kCancelRequestEvent, 0);
  if (!requests.ok()) return requests.status();
  return requests->empty() ? int64_t{0} : requests->back().id;
}

Result<int64_t> RequestCancel(store::Store& store, int64_t study_id, double now) {
  auto before = store.EventsAfter(study_id, kCancelRequestEvent, 0);
  if (!before.ok()) return before.status();
  int64_t last = before->empty() ? 0 : before->back().id;
  SWEEP_RETURN_IF_ERROR(store.AddEvent(study_id, std::nullopt, now, kCancelRequestEvent,
                                       "cancel requested by the user (slurmsweep cancel): a run going on submits "
                                       "nothing more"));
  auto mine = store.EventsAfter(study_id, kCancelRequestEvent, last);
  if (!mine.ok()) return mine.status();
  if (mine->empty()) return Status::Internal("the cancel request just recorded cannot be read back");
  return mine->back().id;
}

Result<std::optional<std::string>> AwaitCancelAnswer(store::Store& store, int64_t study_id, int64_t request_id,
                                                     Clock& clock, double wait_s, double poll_s) {
  double deadline = clock.Now() + wait_s;
  for (;;) {
    auto answers = store.EventsAfter(study_id, kCancelDoneEvent, request_id);
    if (!answers.ok()) return answers.status();
    if (!answers->empty()) return std::optional<std::string>(answers->front().message);
    if (clock.Now() >= deadline) return std::optional<std::string>();
    clock.SleepFor(std::min(poll_s, deadline - clock.Now()));
  }
}

}  // namespace sweep::run
