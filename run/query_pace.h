// QueryPace: one pace of Slurm queries shared by every slurmsweep a user runs against the
// same cluster from one machine. Each study's run loop already polls gently (PollSchedule); ten
// studies would still poll ten times as often. Before a tick, a run loop reserves the next free
// slot in a small file shared through flock; slots are `gap_s` apart, so however many studies
// run, together they start at most one tick per gap.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <string>

#include "base/status.h"

namespace sweep::run {

class QueryPace {
 public:
  // The default file for a cluster: $XDG_RUNTIME_DIR (else /tmp)/slurmsweep-UID/query-budget-ID,
  // ID a hash of `cluster_id` ("ssh host:port" or "local").
  static std::string DefaultPath(const std::string& cluster_id);

  // Opens (creating it and its directory, mode 0700/0600) the shared file. gap_s <= 0: no pacing.
  static Result<QueryPace> Open(const std::string& path, double gap_s);

  QueryPace(QueryPace&& other) noexcept;
  QueryPace& operator=(QueryPace&& other) noexcept;
  QueryPace(const QueryPace&) = delete;
  QueryPace& operator=(const QueryPace&) = delete;
  ~QueryPace();

  // Reserves the next free slot at or after `now` (Unix seconds, wall clock: the file is shared
  // between processes) and returns how long to wait for it; 0 when the slot is now.
  Result<double> Reserve(double now);

 private:
  QueryPace(int fd, std::string path, double gap_s) : fd_(fd), path_(std::move(path)), gap_s_(gap_s) {}
  int fd_ = -1;
  std::string path_;
  double gap_s_ = 0;
};

}  // namespace sweep::run
