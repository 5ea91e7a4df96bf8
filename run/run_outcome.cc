// NoResultReason, and the signal flag behind InterruptSignal.
#include "run/run_outcome.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <pthread.h>

#include <csignal>
#include <cstdlib>
#include <map>

namespace sweep::run {

std::string NoResultReason(const std::vector<reports::TrialRow>& rows, std::string_view objective) {
  bool completed = false, valued = false;
  std::map<std::string, int> by_state;
  for (const auto& r : rows) {
    ++by_state[r.state];
    if (r.state != "completed") continue;
    completed = true;
    valued = valued || r.objective_value.has_value();
  }
  if (!completed) {
    std::string states;
    for (const auto& [state, n] : by_state) states += fmt::format("{}{} {}", states.empty() ? "" : ", ", n, state);
    return fmt::format("no trial completed ({})", states.empty() ? "no trials" : states);
  }
  if (!valued) return fmt::format("no completed trial logged the objective '{}'", objective);
  return "";
}

std::string ResubmitHint(const std::vector<std::string>& states, std::string_view study_path) {
  std::map<std::string, int> again;  // end states a user may want to run again
  for (const auto& s : states) {
    if (s == "cancelled" || s == "failed" || s == "lost" || s == "timeout") ++again[s];
  }
  if (again.empty()) return "";
  std::vector<std::string> parts, names;
  for (const auto& [state, n] : again) parts.push_back(fmt::format("{} {}", n, state)), names.push_back(state);
  return fmt::format("{}: `slurmsweep run --resubmit {} {}` runs them again from scratch{}\n", fmt::join(parts, ", "),
                     fmt::join(names, ","), study_path,
                     again.count("timeout") ? " (timeout: raise [job] time_limit first if they need longer)" : "");
}

InterruptSignal::InterruptSignal() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);  // Slurm's early warning to a controller job (run --as-job)
  // A background job of a non-interactive shell starts with SIGINT ignored, and an ignored signal
  // is never delivered to sigwait.
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  pthread_sigmask(SIG_BLOCK, &set, &old_mask_);
  waiter_ = std::thread([this, set] {
    while (true) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0 || closing_.load()) return;
      if (received_.load() != 0) std::_Exit(128 + sig);  // asked twice: stop now
      received_.store(sig);
    }
  });
}

InterruptSignal::~InterruptSignal() {
  closing_.store(true);
  pthread_kill(waiter_.native_handle(), SIGTERM);  // wakes sigwait, which sees closing_
  waiter_.join();
  pthread_sigmask(SIG_SETMASK, &old_mask_, nullptr);
}

void InterruptibleClock::SleepFor(double seconds) {
  constexpr double kSlice = 0.1;
  while (seconds > 0 && !signal_.received()) {
    double s = std::min(seconds, kSlice);
    inner_.SleepFor(s);
    seconds -= s;
  }
}

}  // namespace sweep::run
