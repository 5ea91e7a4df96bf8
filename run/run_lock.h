// RunLock: one orchestrator per study. A second `run` of the same study (same database) is
// refused while the first lives; the lock dies with its process, so a kill -9 leaves nothing
// stale to clean up.
// Layer run/ (namespace sweep::run): the run loop and its collaborators; uses results/ and the modules.
#pragma once

#include <optional>
#include <string>

#include "base/status.h"

namespace sweep::run {

class RunLock {
 public:
  // Takes an exclusive flock on `path` (created 0600) and writes our pid into it.
  // kFailedPrecondition naming the holder's pid if another process has it.
  static Result<RunLock> Acquire(const std::string& path);
  // The pid of the run holding the lock at `path`, or nullopt if none does. Takes no lock a run
  // could trip over for longer than the check itself.
  static std::optional<std::string> Holder(const std::string& path);
  RunLock(RunLock&& other) noexcept : fd_(other.fd_), path_(std::move(other.path_)) { other.fd_ = -1; }
  RunLock& operator=(RunLock&&) = delete;
  ~RunLock();

  // After fork(): the child writes its own pid (the lock is shared with the parent's
  // descriptor and survives the parent's exit).
  Status RewritePid();

 private:
  RunLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_ = -1;
  std::string path_;
};

}  // namespace sweep::run
