// flock-based run lock; see run_lock.h.
#include "run/run_lock.h"

#include "base/private_file.h"

#include "base/filesystem.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace sweep::run {

Result<RunLock> RunLock::Acquire(const std::string& path) {
  // Never through a planted link or onto another user's file (base/private_file.h).
  auto opened = OpenPrivateFile(path, PrivateOpen::kReadWrite, 0600);
  if (!opened.ok()) return opened.status();
  int fd = opened->release();
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK) {
      // The filesystem has no locks (Lustre without flock: ENOSYS, NFS without lockd: ENOLCK).
      int err = errno;
      ::close(fd);
      return Status::FailedPrecondition(LockFailure("flock on " + path, err));
    }
    char buf[32] = {};
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    std::string holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "?";
    while (!holder.empty() && (holder.back() == '\n' || holder.back() == ' ')) holder.pop_back();
    ::close(fd);
    return Status::FailedPrecondition("another slurmsweep run (pid " + holder +
                                      ") is already running this study (lock " + path + ")");
  }
  RunLock lock(fd, path);
  SWEEP_RETURN_IF_ERROR(lock.RewritePid());
  return lock;
}

std::optional<std::string> RunLock::Holder(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;  // never run here
  std::optional<std::string> holder;
  if (::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK) {
    char buf[32] = {};
    ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
    holder = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "?";
    while (!holder->empty() && (holder->back() == '\n' || holder->back() == ' ')) holder->pop_back();
  }
  ::close(fd);  // also drops the shared lock at once
  return holder;
}

Status RunLock::RewritePid() {
  std::string pid = std::to_string(::getpid()) + "\n";
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    return Status::IOError(path_ + ": " + std::strerror(errno));
  }
  return Status::OK();
}

RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace sweep::run
