// What the run loop's collaborators share; see run_context.h.
#include "run/run_context.h"

#include "base/telemetry.h"
#include "run/job_marks.h"

namespace sweep::run {

std::string TelemetryPath(const store::TrialRecord& t) { return t.log_path + std::string(kTelemetrySuffix); }

slurm::ReadRequest MarksRequest(const store::TrialRecord& t) { return {MarksPath(t.log_path), 0, 64 << 10}; }

void ReadStartMarks(slurm::Transport& transport, const std::vector<const store::TrialRecord*>& trials,
                    MarksRead& marks) {
  std::vector<slurm::ReadRequest> reads;
  std::vector<int64_t> ids;
  for (const store::TrialRecord* t : trials) {
    if (marks.count(t->id)) continue;
    reads.push_back(MarksRequest(*t));
    ids.push_back(t->id);
  }
  if (reads.empty()) return;
  auto got = transport.ReadMany(reads);
  for (size_t i = 0; i < got.size(); ++i) marks.emplace(ids[i], std::move(got[i]));
}

}  // namespace sweep::run
