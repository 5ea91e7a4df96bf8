// Reconciler: what Slurm did while nobody watched, made good before anything new is submitted.
// Trials left "submitting" by a crash between sbatch and storing the job id are adopted: by name in
// squeue (one call), by accounting or by their start marks when Slurm has purged the job, else
// they go back to new. Jobs Slurm ran again under the same id (requeue after a node failure or
// preemption) end their attempt: a new attempt follows, or the trial ends when [retry] allows no
// more.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "run/ingester.h"
#include "run/run_context.h"
#include "run/submitter.h"
#include "slurm/slurm_client.h"
#include "store/store.h"

namespace sweep::run {

class Reconciler {
 public:
  Reconciler(RunContext& ctx, const Submitter& submitter, Ingester& ingester)
      : ctx_(ctx), submitter_(submitter), ingester_(ingester) {}

  // Adopts the jobs of trials left "submitting" (or puts them back to new).
  Status Reconcile(std::vector<store::TrialRecord>& trials);

  // Slurm ran a job again under the same id: the run that ended becomes an ended attempt. Uses
  // this tick's `reads` (Ingester::Read): logs shorter than their offset, the start marks read with
  // the logs; restarted trials' chunks are dropped (the new run's log is read from its start), and
  // restarted trials whose new run has not started yet go to `reads.hold`.
  Status HandleRestarts(std::vector<store::TrialRecord>& trials, const std::map<std::string, slurm::JobInfo>& jobs,
                        Ingester::Reads& reads);

 private:
  // Trials being submitted whose job already ran: their job ids, by trial id, from the start marks
  // jobs leave beside their logs (one ReadMany). Finds jobs that squeue has purged.
  Result<std::map<int64_t, std::string>> JobsFromStartMarks(const std::vector<store::TrialRecord>& trials);
  Status FindRestarts(std::vector<store::TrialRecord>& trials, const std::map<std::string, slurm::JobInfo>& jobs,
                      Ingester::Reads& reads);

  RunContext& ctx_;
  const Submitter& submitter_;
  Ingester& ingester_;
};

}  // namespace sweep::run
