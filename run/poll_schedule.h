// PollSchedule: how long the run loop waits before its next tick. Shared clusters punish tools
// that poll slurmctld hard, so the wait starts short after something changed, grows while
// nothing does, backs off further while the cluster is unreachable, and is jittered so that
// many orchestrators started together do not poll in lock-step.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <cstdint>
#include <random>

namespace sweep::run {

class PollSchedule {
 public:
  // `min_s`: the wait right after a change; `max_s`: the cap while idle; outages back off
  // to at most max(`max_s`, 120 s).
  PollSchedule(double min_s, double max_s, uint32_t seed);

  // The wait after a tick. `changed`: a trial was submitted, changed state or ended.
  // `unavailable`: the tick could not reach the cluster.
  double Next(bool changed, bool unavailable);

 private:
  double Jitter(double seconds);

  double min_s_, max_s_;
  double idle_s_;  // current wait while nothing changes
  int failures_ = 0;
  std::minstd_rand rng_;
};

}  // namespace sweep::run
