// Opening the files slurmsweep writes so that nobody else can redirect them. Another user who can
// write to the study's folder (a shared project directory, /tmp without fs.protected_symlinks) may
// plant a symbolic link or a FIFO where we write, or guess a temporary name. So every file the
// product writes is opened here: O_NOFOLLOW (a link is refused, never followed), O_CLOEXEC,
// O_NONBLOCK while opening (a FIFO cannot block us), and the result must be a regular file with
// one link that we own; modes are set with fchmod on the descriptor, never by path. Temporary
// names are random and created with O_EXCL. Uses POSIX and the standard library only.
#pragma once

#include <sys/types.h>

#include <string>

#include "base/status.h"

namespace sweep {

// A file descriptor closed on every return path.
class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(other.release()) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept;
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  ~FileDescriptor();

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  // Hands the descriptor over (to a caller that keeps it, or checks close() itself).
  int release();

 private:
  int fd_ = -1;
};

enum class PrivateOpen {
  kReadWrite,  // created if missing, content kept (a lock file, a database)
  kTruncate,   // created if missing, emptied (a pid file)
  kAppend,     // created if missing, written at the end (a run log)
};

// Opens (creating with `mode` if missing) the file at `path` for writing, and sets its mode to
// `mode` with fchmod. Refused, with a message naming the path and saying why: a symbolic link, a
// FIFO, a device or a directory at `path`, a file with more than one name (a hard link), or one
// owned by another user. Nothing is written, truncated or chmod'ed before these checks pass.
Result<FileDescriptor> OpenPrivateFile(const std::string& path, PrivateOpen how, mode_t mode = 0600);

// Creates a new file beside `path` under a random name (PATH.tmp-XXXXXXXXXXXXXXXX) with O_EXCL,
// so no planted file or link can stand in for it. `mode` passes through the umask (the open()
// mode), unlike OpenPrivateFile. `*tmp_path` receives the name.
Result<FileDescriptor> CreateTempBeside(const std::string& path, mode_t mode, std::string* tmp_path);

// Writes all of `data` to `fd` (retrying short writes and EINTR); `path` names it in errors.
Status WriteAll(int fd, std::string_view data, const std::string& path);

// 16 random hex digits from the kernel (getrandom), for names another user cannot guess.
std::string RandomHexSuffix();

}  // namespace sweep
