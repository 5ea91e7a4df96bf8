// RetryPolicy: what comes after a job's end. Slurm says how it ended and the log often says why
// (Classify, logs/classify.h); the class decides whether the trial runs again from scratch
// ([retry], MaybeRetry), and a job that stopped at its time limit after saving a checkpoint goes
// on in a new job with its curve kept ([job] max_chain, MaybeChain).
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <string>

#include "base/status.h"
#include "run/ingester.h"
#include "run/run_context.h"
#include "store/store.h"

namespace sweep::run {

class RetryPolicy {
 public:
  RetryPolicy(RunContext& ctx, Ingester& ingester) : ctx_(ctx), ingester_(ingester) {}

  // The trial's end class and reason from Slurm's `state` (and `reason`), refined by its log's tail
  // and the stop it was asked for.
  Status Classify(const store::TrialRecord& trial, std::string& state, std::string& reason);
  // A checkpointed job that stopped: true when the trial goes on in a new job (or its chain ended
  // at max_chain, recorded here); then no retry applies.
  Result<bool> MaybeChain(store::TrialRecord& trial);
  // [retry]: the trial starts over when its class allows another attempt.
  Status MaybeRetry(store::TrialRecord& trial);
  // Back to new for a fresh attempt: metrics dropped, the attempt's run time kept as a cost.
  Status StartOver(store::TrialRecord& trial, std::string reason);

 private:
  RunContext& ctx_;
  Ingester& ingester_;
};

}  // namespace sweep::run
