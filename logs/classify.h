// Failure classification: how a trial's job ended, refined by what its log says (a CUDA OOM, a
// host OOM kill, a diverged loss, the last error line). Pure functions of text and values; the
// run loop reads the log tail and the objective's last point and decides retries from the class.
// Module logs/ (namespace sweep::logs): reading training logs; uses base/ only. One of its four public
// headers (metrics_parser.h, log_summary.h, telemetry_parser.h, classify.h); the rest is internal.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sweep::logs {

// The objective's last logged point, for telling a diverged run from another failure.
struct ObjectiveAtEnd {
  std::string metric;
  int64_t step = 0;
  double value = 0;
};

// A job Slurm reports "cancelled": pruned or skipped by slurmsweep (its stop request says
// which), by `slurmsweep cancel`, or by someone else (then `slurm_state` is named).
void ClassifyCancelled(std::string_view stop_request, std::string_view slurm_state, std::string& state,
                       std::string& reason);

// Whether ClassifyFromLog can refine `state`: "failed", "completed" and "out_of_memory" can.
bool EndReadsLog(std::string_view state);

// Refines `state` and `reason` from the last 64 KiB or so of the job's log: "cuda_oom",
// "out_of_memory" (host), "diverged" (`last` non-finite, even at exit 0, or the trainer said so),
// or a failure whose reason gains the log's last line (Slurm's own "srun:"/"slurmstepd:" lines
// aside), after the last error line when that is another one. `last` is only looked at for
// "failed" and "completed".
void ClassifyFromLog(std::string_view log_tail, const std::optional<ObjectiveAtEnd>& last, std::string& state,
                     std::string& reason);

// The last `n` non-empty lines of `log_tail` (a partial last line included), oldest first, each cut
// to 200 bytes: what a user reads first of a failed run.
std::vector<std::string> LastLogLines(std::string_view log_tail, size_t n);

}  // namespace sweep::logs
