// Notifications for unattended runs ([notify] in the study file): `run` starts a local command
// (/bin/sh -c) for each event, with the event as one JSON object on its stdin and its name in
// $SLURMSWEEP_EVENT. A notification never stops or slows the run: the command runs in the
// background, in a process group of its own, is killed after timeout_s, and whatever goes wrong
// (exit code, timeout, cannot start) is logged by the caller's `log`, never returned.
//
// Events (schema version 1, README): study_finished, trial_failed (the trial ended in a failed
// class: failed, timeout, out_of_memory, cuda_oom, diverged, node_fail, preempted, lost, skipped),
// cluster_unreachable (after unreachable_minutes without the cluster), cluster_reachable (it
// answers again after such an event), quota_pause (sbatch refused by a submit quota).
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <sys/types.h>

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/clock.h"
#include "study/study.h"

namespace sweep::run {

inline constexpr int kNotifyJsonVersion = 1;

class Notifier {
 public:
  using Log = std::function<void(const std::string& kind, const std::string& message)>;
  // `clock` times the commands out; `log` gets "notify" (a command was started) and
  // "notify_failed" lines.
  Notifier(const study::Study& study, const Clock& clock, Log log);
  ~Notifier();  // kills what is still running: Drain first to let it finish
  Notifier(const Notifier&) = delete;
  Notifier& operator=(const Notifier&) = delete;

  // Trials already ended in a failed class before this run: no trial_failed for them.
  void SetKnownFailures(std::set<std::string> trial_keys) { failed_ = std::move(trial_keys); }

  // What the run loop saw. `trial` (key, state, reason, job_id, log_path): every trial now, after a tick.
  struct TrialFacts {
    std::string key, state, reason, job_id, log_path;
  };
  void OnTick(bool unavailable, const std::vector<TrialFacts>& trials);
  // The run loop's events: "unavailable" (also before the first tick) and "submit_paused".
  void OnRunEvent(const std::string& kind, const std::string& message);
  // Every trial has ended: `details` (progress, best, exit code) go into the event.
  void Finished(const std::string& message, const nlohmann::json& details);

  // Reaps commands that ended and kills those past their timeout, logging failures. Cheap.
  void Poll();
  // Waits for the commands still running, each at most until its timeout: at the end of a run.
  void Drain();

  // Starts the command for one event if the study subscribed to `kind`. Public for tests.
  void Send(const std::string& kind, const std::string& message, nlohmann::json details = nlohmann::json::object());

 private:
  struct Child {
    pid_t pid = 0;
    double deadline = 0;
    std::string kind;
    int output_fd = -1;  // the command's stdout and stderr, for a failure's message
  };
  void Reap(Child& child, int status);

  const study::Study& study_;
  const Clock& clock_;
  Log log_;
  std::vector<Child> children_;
  std::set<std::string> failed_;
  std::optional<double> unreachable_since_;
  bool unreachable_sent_ = false;
  std::string last_unreachable_;
};

}  // namespace sweep::run
