// Atomic file replacement; see atomic_file.h.
#include "base/atomic_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace sweep {

namespace {
constexpr size_t kFlushAt = 1 << 20;
}  // namespace

AtomicFile::AtomicFile(std::string path, std::optional<mode_t> mode) : path_(std::move(path)), mode_(mode) {
  auto fd = CreateTempBeside(path_, mode_.value_or(0666), &tmp_);
  if (fd.ok()) {
    fd_ = std::move(*fd);
  } else {
    status_ = fd.status();
  }
}

AtomicFile::~AtomicFile() {
  if (!committed_ && !tmp_.empty()) {
    fd_ = FileDescriptor();
    ::unlink(tmp_.c_str());
  }
}

void AtomicFile::Append(std::string_view text) {
  if (!status_.ok()) return;
  buffer_.append(text);
  if (buffer_.size() >= kFlushAt) Flush();
}

void AtomicFile::Flush() {
  if (status_.ok()) status_ = WriteAll(fd_.get(), buffer_, tmp_);
  buffer_.clear();
}

Status AtomicFile::Commit() {
  Flush();
  SWEEP_RETURN_IF_ERROR(status_);
  // fchmod on the descriptor, never chmod by path: the path may be swapped under us.
  if (mode_ && ::fchmod(fd_.get(), *mode_) != 0) {
    return Status::IOError("cannot chmod " + tmp_ + ": " + std::strerror(errno));
  }
  // close() is where NFS reports a failed write.
  if (::close(fd_.release()) != 0) return Status::IOError("cannot write " + tmp_ + ": " + std::strerror(errno));
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    return Status::IOError("cannot rename " + tmp_ + " to " + path_ + ": " + std::strerror(errno));
  }
  committed_ = true;
  return Status::OK();
}

Status WriteFileAtomically(const std::string& path, std::string_view content) {
  AtomicFile file(path);
  file.Append(content);
  return file.Commit();
}

}  // namespace sweep
