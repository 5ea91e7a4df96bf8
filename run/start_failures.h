// A failure storm: a study whose trials crash at start (a missing file, a bad flag) would submit
// and fail every trial, and the user would learn it only from the end summary. When the first few
// trials to end have all failed in the same class and none has completed, the run stops
// submitting. Only ends that say something about the study's program count: completed, failed,
// timeout, out_of_memory, cuda_oom and diverged (a CUDA OOM or a divergence shows the program
// ran). Ends that are slurmsweep's or the cluster's doing (pruned, cancelled, skipped, lost,
// node_fail, preempted) are not counted. A storm is a failed, timeout or out_of_memory class.
// Layer run/ (namespace sweep::run): pure logic (no I/O), fed by the run loop.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

namespace sweep::run {

class StartFailures {
 public:
  // How many first ends decide: min(3, max_concurrent), at least 2, so a single flaky failure never
  // stops a serial study and a wide one stops after three.
  static int Needed(int max_concurrent);
  explicit StartFailures(int needed) : needed_(needed) {}

  // A trial of the study completed (in this run or before it): the program works, no storm.
  void Completed() { completed_ = true; }
  // An attempt of `trial` ended in `state`; only a trial's first counted end counts.
  void Ended(int64_t trial, std::string_view state);
  // The class of the storm, or "" when there is none.
  std::string Storm() const;
  int needed() const { return needed_; }
  // The first trial whose end counted: whose log the storm's message shows.
  int64_t first_trial() const { return first_trial_; }

 private:
  int needed_;
  bool completed_ = false;
  std::set<int64_t> counted_;
  std::string first_class_;
  int64_t first_trial_ = 0;
  int same_ = 0;         // counted ends in first_class_ among the first `needed_`
  bool broken_ = false;  // a counted end of another class came among the first `needed_`
};

// For the warning that the study file changed: " N trial(s) timed out ...: `slurmsweep run --resubmit
// timeout PATH` runs them again with the new settings", or "" for none. Trials keep the results of
// the settings they ran with, so a raised [job] time_limit reaches them only through a resubmit.
std::string ChangedStudyTimeoutHint(int64_t timed_out, std::string_view study_path);

}  // namespace sweep::run
