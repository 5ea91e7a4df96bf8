// How `run` ends for a script: whether the trials that ended left a result (exit 5 if not), and
// SIGINT/SIGTERM turned into a clean stop (exit 128 + signal) that leaves the jobs to Slurm.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <atomic>
#include <csignal>
#include <string>
#include <thread>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "reports/csv.h"

namespace sweep::run {

// Why a run whose trials have all ended has nothing to rank: "no trial completed (3 failed, ...)"
// or "no trial logged the objective 'x'"; "" if some completed trial has a value of it.
std::string NoResultReason(const std::vector<reports::TrialRow>& rows, std::string_view objective);

// The end-of-run line for the trials a user may want to run again, from every trial's state:
// "2 failed, 1 timeout: `slurmsweep run --resubmit failed,timeout STUDY` runs them again from
// scratch", and for timeouts that [job] time_limit is what to raise first; "" when there are none.
std::string ResubmitHint(const std::vector<std::string>& states, std::string_view study_path);

// SIGINT and SIGTERM, for as long as this object lives, are blocked in every thread and taken by
// one thread of its own (sigwait) that records the first; a second one ends the process at once
// with 128 + signal. Blocked signals stay blocked in the children (sbatch, squeue), so a Ctrl-C on
// the terminal, which goes to the whole process group, cannot kill an sbatch half way. Create it
// before any other thread, and after fork (Detach).
class InterruptSignal {
 public:
  InterruptSignal();
  ~InterruptSignal();
  InterruptSignal(const InterruptSignal&) = delete;
  InterruptSignal& operator=(const InterruptSignal&) = delete;
  // The signal received (SIGINT, SIGTERM), or 0.
  int received() const { return received_.load(); }

 private:
  std::atomic<int> received_{0};
  std::atomic<bool> closing_{false};
  sigset_t old_mask_;
  std::thread waiter_;
};

// A clock whose sleeps end early once a signal came, so `run` stops within a fraction of a second
// instead of after its poll interval.
class InterruptibleClock final : public Clock {
 public:
  InterruptibleClock(Clock& inner, const InterruptSignal& signal) : inner_(inner), signal_(signal) {}
  double Now() const override { return inner_.Now(); }
  void SleepFor(double seconds) override;

 private:
  Clock& inner_;
  const InterruptSignal& signal_;
};

}  // namespace sweep::run
