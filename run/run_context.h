// RunContext: what the run loop's collaborators share (runner.h): the study, its store and
// cluster, the clock, this study file's trials and the event log. Runner owns it and hands each
// collaborator (submitter, reconciler, ingester, memory feedback, retry policy, report refresher,
// tpe proposer) a reference; tests build one over a fake transport and a fake clock.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "run/study_files.h"
#include "slurm/slurm_client.h"
#include "slurm/transport.h"
#include "store/store.h"
#include "study/space.h"
#include "study/study.h"

namespace sweep::run {

struct TickReport {
  int active = 0;   // trials with a job that had not ended before this tick
  int running = 0;  // after the tick: trials whose job runs
  int queued = 0;   // after the tick: trials whose job waits in the queue
  int submitted = 0;
  int ended = 0;
  int changed = 0;            // trials whose state or reason changed
  int64_t points = 0;         // metric rows ingested
  int slurm_queries = 0;      // squeue + sacct calls this tick, all of them (the batched query, counts)
  int64_t cluster_calls = 0;  // commands, file writes and reads sent to the cluster this tick
  bool done = false;          // every trial has ended
  bool unavailable = false;   // the cluster could not be reached; nothing was marked
  // The trials of this study file as the tick left them (as StudyTrials, report_data.h, would list
  // them from the store, `left_out` not among them), for the tick hook: the run's own view, valid
  // until the next tick. Null where no tick produced them.
  const std::vector<store::TrialRecord>* trials = nullptr;
  int left_out = 0;
};

struct RunContext {
  // Logs, stores and hands on an event of the run (Runner::Event); `trial_id` empty for the study's.
  using EventSink = std::function<void(std::optional<int64_t> trial_id, const std::string& kind, const std::string&)>;

  RunContext(const study::Study& s, store::Store& db, slurm::CountingTransport& tr, slurm::SlurmClient& c, Clock& cl)
      : study(s), store(db), transport(tr), client(c), clock(cl) {}

  const study::Study& study;
  store::Store& store;
  slurm::CountingTransport& transport;
  slurm::SlurmClient& client;
  Clock& clock;
  int64_t study_id = 0;
  StudyFiles files;                        // where this study's files are on the cluster (Prepare)
  std::map<std::string, TrialSpec> specs;  // by trial key: this study file's trials
  EventSink event;
  // Submit configurations the memory planner predicts will run out of memory (--submit-predicted-oom).
  bool submit_predicted_oom = false;

  void Event(std::optional<int64_t> trial_id, const std::string& kind, const std::string& message) const {
    if (event) event(trial_id, kind, message);
  }
  int Gpus() const { return std::max(1, study.job.nodes * study.job.gpus_per_node); }
};

// Where a trial's telemetry sampler writes ([job] monitor = true): beside its log.
std::string TelemetryPath(const store::TrialRecord& trial);

// Start marks (job_marks.h) read so far this tick, by trial id: each trial's marks file is read at
// most once a tick, by whoever needs it first.
using MarksRead = std::map<int64_t, Result<std::string>>;
// The read of a trial's marks file (beside its log).
slurm::ReadRequest MarksRequest(const store::TrialRecord& trial);
// Reads the start marks of those of `trials` not in `marks` yet, with one ReadMany.
void ReadStartMarks(slurm::Transport& transport, const std::vector<const store::TrialRecord*>& trials,
                    MarksRead& marks);

}  // namespace sweep::run
