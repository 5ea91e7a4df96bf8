// Safe opening of the files slurmsweep writes; see private_file.h.
#include "base/private_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace sweep {

FileDescriptor& FileDescriptor::operator=(FileDescriptor&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

FileDescriptor::~FileDescriptor() {
  if (fd_ >= 0) ::close(fd_);
}

int FileDescriptor::release() { return std::exchange(fd_, -1); }

namespace {

Status OpenError(const std::string& path, int err) {
  if (err == ELOOP) {
    return Status::FailedPrecondition(path +
                                      " is a symbolic link; slurmsweep writes its files only where it "
                                      "created them (another user may have planted the link): remove it and rerun");
  }
  if (err == ENXIO) return Status::FailedPrecondition(path + " is a FIFO or a socket, not a regular file; remove it");
  return Status::IOError(path + ": " + std::strerror(err));
}

// The invariant of every file we write into: a regular file, one name, ours.
Status CheckOurs(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Status::IOError(path + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) {
    const char* what = S_ISDIR(st.st_mode)                          ? "a directory"
                       : S_ISFIFO(st.st_mode)                       ? "a FIFO"
                       : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device"
                                                                    : "not a regular file";
    return Status::FailedPrecondition(path + " is " + what + ", not a regular file; slurmsweep refuses to write there");
  }
  if (st.st_uid != ::geteuid()) {
    return Status::FailedPrecondition(path + " belongs to another user (uid " + std::to_string(st.st_uid) +
                                      "); slurmsweep writes only its own files: remove it and rerun");
  }
  if (st.st_nlink > 1) {
    return Status::FailedPrecondition(path + " has " + std::to_string(st.st_nlink) +
                                      " names (a hard link); slurmsweep refuses to write a file that is also "
                                      "somewhere else: remove it and rerun");
  }
  return Status::OK();
}

}  // namespace

Result<FileDescriptor> OpenPrivateFile(const std::string& path, PrivateOpen how, mode_t mode) {
  // O_NONBLOCK: opening a FIFO for writing with no reader fails (ENXIO) instead of waiting.
  int flags = O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | (how == PrivateOpen::kAppend ? O_APPEND : 0);
  FileDescriptor fd(::open(path.c_str(), flags, mode));
  if (!fd.valid()) return OpenError(path, errno);
  SWEEP_RETURN_IF_ERROR(CheckOurs(fd.get(), path));
  int fl = ::fcntl(fd.get(), F_GETFL);
  if (fl < 0 || ::fcntl(fd.get(), F_SETFL, fl & ~O_NONBLOCK) != 0) {
    return Status::IOError(path + ": " + std::strerror(errno));
  }
  if (::fchmod(fd.get(), mode) != 0) return Status::IOError(path + ": cannot chmod: " + std::strerror(errno));
  if (how == PrivateOpen::kTruncate && ::ftruncate(fd.get(), 0) != 0) {
    return Status::IOError(path + ": " + std::strerror(errno));
  }
  return fd;
}

std::string RandomHexSuffix() {
  unsigned char bytes[8];
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;  // no getrandom: O_EXCL still refuses a planted name, we only retry more
    got += static_cast<size_t>(n);
  }
  char text[17];
  for (size_t i = 0; i < sizeof bytes; ++i) std::snprintf(text + 2 * i, 3, "%02x", bytes[i]);
  return std::string(text, 16);
}

Result<FileDescriptor> CreateTempBeside(const std::string& path, mode_t mode, std::string* tmp_path) {
  // A clash is either chance (2^-64) or someone creating names ahead of us: a few tries, then stop.
  int err = 0;
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::string tmp = path + ".tmp-" + RandomHexSuffix();
    FileDescriptor fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode));
    if (fd.valid()) {
      *tmp_path = std::move(tmp);
      return fd;
    }
    err = errno;
    if (err != EEXIST) return OpenError(tmp, err);
  }
  return Status::IOError("cannot create a temporary file beside " + path + ": " + std::strerror(err));
}

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::IOError("cannot write " + path + ": " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
  return Status::OK();
}

}  // namespace sweep
