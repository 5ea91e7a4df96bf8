// The shared query pace; see query_pace.h.
#include "run/query_pace.h"

#include "base/private_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>

namespace sweep::run {

std::string QueryPace::DefaultPath(const std::string& cluster_id) {
  const char* runtime = std::getenv("XDG_RUNTIME_DIR");
  std::string base = runtime && *runtime ? runtime : "/tmp";
  return fmt::format("{}/slurmsweep-{}/query-budget-{:016x}", base, getuid(), std::hash<std::string>{}(cluster_id));
}

Result<QueryPace> QueryPace::Open(const std::string& path, double gap_s) {
  if (gap_s <= 0) return QueryPace(-1, path, 0);
  std::string dir = path.substr(0, path.find_last_of('/'));
  if (!dir.empty() && mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::IOError(fmt::format("cannot create {}: {}", dir, std::strerror(errno)));
  }
  // In /tmp another user could have made the folder first: it must be ours and closed to others.
  struct stat st;
  if (!dir.empty() &&
      (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022) != 0)) {
    return Status::FailedPrecondition(
        fmt::format("{} is not a folder of yours closed to others; remove it (or set XDG_RUNTIME_DIR)", dir));
  }
  auto fd = OpenPrivateFile(path, PrivateOpen::kReadWrite, 0600);
  if (!fd.ok()) return fd.status();
  return QueryPace(fd->release(), path, gap_s);
}

QueryPace::QueryPace(QueryPace&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), path_(std::move(other.path_)), gap_s_(other.gap_s_) {}

QueryPace& QueryPace::operator=(QueryPace&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
    gap_s_ = other.gap_s_;
  }
  return *this;
}

QueryPace::~QueryPace() {
  if (fd_ >= 0) close(fd_);
}

Result<double> QueryPace::Reserve(double now) {
  if (fd_ < 0) return 0.0;
  if (flock(fd_, LOCK_EX) != 0) return Status::IOError(fmt::format("cannot lock {}: {}", path_, std::strerror(errno)));
  // The file holds the next free slot as text; empty or unreadable means "now".
  char buf[64] = {};
  ssize_t n = pread(fd_, buf, sizeof buf - 1, 0);
  double next = n > 0 ? std::strtod(buf, nullptr) : 0;
  // A slot far in the future (a clock that jumped back, a corrupt file) must not stall us.
  if (!(next >= 0) || next > now + 3600) next = 0;
  double slot = std::max(now, next);
  std::string text = fmt::format("{:.6f}\n", slot + gap_s_);
  bool ok = ftruncate(fd_, 0) == 0 && pwrite(fd_, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size());
  int saved = errno;
  flock(fd_, LOCK_UN);
  if (!ok) return Status::IOError(fmt::format("cannot write {}: {}", path_, std::strerror(saved)));
  return slot - now;
}

}  // namespace sweep::run
