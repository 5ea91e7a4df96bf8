// A `cancel` that a run going on must obey, also one that has not submitted yet. `cancel` itself
// scancels the jobs the database knows and marks the unsubmitted trials cancelled, but a run that
// is starting (`run --detach` returns at once, its child then connects, prepares and submits) or
// that proposes trials as results come in (tpe) writes trials `cancel` never saw. So `cancel`
// also records a request (an event of the study), and a run submits nothing after a request newer
// than its start: before each submission it asks (Runner), cancels what it has, records its answer
// and ends once its trials have. `cancel` waits for that answer and prints it.
//
// A request counts for the runs started before it: a run remembers the last request at its start
// (before `--detach` forks, so a request right after `run --detach` returned is newer), and one
// made while no run went on never stops a later run.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/status.h"
#include "store/store.h"

namespace sweep::run {

inline constexpr const char* kCancelRequestEvent = "cancel_request";
inline constexpr const char* kCancelDoneEvent = "cancel_done";

// The id of the study's last cancel request; 0 when there is none or no such study yet.
Result<int64_t> LastCancelRequest(store::Store& store, const std::string& study_name);

// Records a request of `cancel` for study `study_id`; returns its id.
Result<int64_t> RequestCancel(store::Store& store, int64_t study_id, double now);

// The answer of the run that obeyed request `request_id`, waiting up to `wait_s` for it (polling
// every `poll_s`); nullopt when none came.
Result<std::optional<std::string>> AwaitCancelAnswer(store::Store& store, int64_t study_id, int64_t request_id,
                                                     Clock& clock, double wait_s, double poll_s = 0.5);

}  // namespace sweep::run
