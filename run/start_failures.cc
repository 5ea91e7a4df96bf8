// The first ends of a study against a failure storm; see start_failures.h.
#include "run/start_failures.h"

#include <fmt/format.h>

#include <algorithm>

namespace sweep::run {

namespace {
bool IsStormClass(std::string_view s) { return s == "failed" || s == "timeout" || s == "out_of_memory"; }
bool Counts(std::string_view s) { return IsStormClass(s) || s == "completed" || s == "cuda_oom" || s == "diverged"; }
}  // namespace

int StartFailures::Needed(int max_concurrent) { return std::clamp(max_concurrent, 2, 3); }

void StartFailures::Ended(int64_t trial, std::string_view state) {
  if (state == "completed") completed_ = true;
  if (!Counts(state) || broken_ || same_ >= needed_) return;
  if (!counted_.insert(trial).second) return;
  if (first_class_.empty()) first_class_ = std::string(state), first_trial_ = trial;
  if (state == first_class_ && IsStormClass(state)) ++same_;
  else broken_ = true;
}

std::string StartFailures::Storm() const {
  if (completed_ || broken_ || same_ < needed_) return "";
  return first_class_;
}

std::string ChangedStudyTimeoutHint(int64_t timed_out, std::string_view study_path) {
  if (timed_out <= 0) return "";
  return fmt::format(
      " {} trial(s) ended at their time limit (timeout) under the old settings: if the change raised [job] "
      "time_limit (or another [job] setting they need), `slurmsweep run --resubmit timeout {}` runs them again "
      "with the new ones.",
      timed_out, study_path);
}

}  // namespace sweep::run
