// MemoryFeedback: what the run learns about GPU memory. A study that names a model gets the
// memory planner's verdict before anything is queued; a CUDA OOM rules out every configuration
// needing at least as much memory (queued ones are cancelled); a finished trial whose measured
// peak exceeds the prediction by more than the headroom grows the headroom to that excess, and
// unsubmitted configurations that no longer fit are skipped.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "run/run_context.h"
#include "planner/planner.h"
#include "store/store.h"
#include "study/space.h"

namespace sweep::run {

class MemoryFeedback {
 public:
  static constexpr double kMiB = 1024.0 * 1024.0;
  static constexpr double kGiB = 1024.0 * kMiB;

  explicit MemoryFeedback(RunContext& ctx) : ctx_(ctx) {}

  // The plan of `specs`, the study file's trials, when the study names a model ([job.vars] model):
  // trial key -> why it is dropped (parallelism rules; the memory plan unless
  // `submit_predicted_oom`). Without a model: none, and no plan.
  Result<std::map<std::string, std::string>> PlanStudy(bool submit_predicted_oom);
  // tpe: the plan of proposed trials, kept so CalibrateMemory learns from them too.
  Status PlanProposed(const std::vector<TrialSpec>& specs);

  // Learning from a CUDA OOM: unsubmitted and queued trials it dominates are skipped (one scancel).
  Status SkipDominatedByOom(const store::TrialRecord& oom, std::vector<store::TrialRecord>& trials);
  // NeedsAtLeastAsMuchMemory, with the space's float ranges (lr, weight decay) left out: a sampler
  // draws a new value for every trial, so requiring them equal would let an OOM rule out only
  // itself, and the memory plan does not read them either.
  bool DominatedByOom(const TrialSpec& candidate, const TrialSpec& oom) const;

  // Feeds a finished trial's measured peak GPU memory (Megatron's memory report) back into the plan.
  Status CalibrateMemory(const store::TrialRecord& trial, std::vector<store::TrialRecord>& trials);
  // By how many bytes a finished trial's measured peak exceeded the plan's prediction; nullopt
  // without a prediction or a measurement.
  Result<std::optional<double>> MeasuredExcess(const store::TrialRecord& trial);
  // A resumed run learns what the trials that ended before taught (MeasuredExcess of each).
  void RaiseHeadroom(double bytes) { headroom_bytes_ = std::max(headroom_bytes_, bytes); }
  // The plan's headroom as calibrated so far, in bytes.
  double headroom_bytes() const { return headroom_bytes_; }

 private:
  RunContext& ctx_;
  std::optional<planner::Plan> plan_;                         // the memory plan, for studies that name a model
  std::map<std::string, const planner::PlanRow*> plan_rows_;  // by trial key, into plan_
  std::map<std::string, planner::PlanRow> tpe_rows_;          // tpe: the plan of each proposed trial (plan_rows_ too)
  double headroom_bytes_ = 0;                                 // the plan's headroom, grown by CalibrateMemory
};

}  // namespace sweep::run
