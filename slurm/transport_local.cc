// LocalTransport: the Transport for running on a login node itself. Commands go through
// Boost.Process; files are plain POSIX calls, the only place outside SSH that touches them.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/process.hpp>
#include <cerrno>
#include <cstring>
#include <future>
#include <string>
#include <utility>

#include "base/private_file.h"
#include "slurm/transport.h"

namespace sweep::slurm {
namespace {

namespace bp = boost::process;

Status ErrnoStatus(const std::string& what, const std::string& path, int err) {
  std::string msg = what + " " + path + ": " + std::strerror(err);
  if (err == ENOENT) return Status::NotFound(msg);
  return Status::IOError(msg);
}

// Closes a file descriptor on every return path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Hands the descriptor back so its close() result can be checked.
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

class LocalTransport final : public Transport {
 public:
  Result<CommandOutput> Run(const std::string& command) override {
    boost::asio::io_context io;
    std::future<std::string> out;
    std::future<std::string> err;
    CommandOutput result;
    try {
      // Both pipes are drained by one io_context, so a child that fills stderr while we
      // wait on stdout cannot block. stdin is /dev/null: a command that reads it must
      // not hang on (or steal) our own stdin.
      bp::child child(bp::exe = "/bin/sh", bp::args = {"-c", command}, bp::std_in<bp::null, bp::std_out> out,
                      bp::std_err > err, io);
      io.run();
      child.wait();
      int raw = child.native_exit_code();
      // A shell reports a child killed by signal N as 128+N; callers see the same here.
      result.exit_code = WIFSIGNALED(raw) ? 128 + WTERMSIG(raw) : WEXITSTATUS(raw);
      result.out = out.get();
      result.err = err.get();
    } catch (const std::exception& e) {
      // fork/pipe failures are resource exhaustion, which passes: retry, don't fail trials.
      return Status::Unavailable("cannot run /bin/sh -c: " + std::string(e.what()));
    }
    return result;
  }

  Status WriteFile(const std::string& path, std::string_view content, int mode) override {
    std::string tmp;
    Status st = WriteTemp(path, content, mode, &tmp);
    if (st.ok() && ::rename(tmp.c_str(), path.c_str()) != 0) st = ErrnoStatus("cannot rename to", path, errno);
    if (!st.ok()) {
      if (!tmp.empty()) ::unlink(tmp.c_str());
      // A missing parent directory is the caller's setup problem, not a missing file to poll.
      if (st.IsNotFound()) return Status::IOError(st.message());
    }
    return st;
  }

  Result<std::string> ReadFrom(const std::string& path, uint64_t offset, size_t max_bytes) override {
    Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) return ErrnoStatus("cannot open", path, errno);
    std::string data;
    constexpr size_t kChunk = 64 * 1024;
    // Grown chunk by chunk: max_bytes may be far larger than the file.
    while (data.size() < max_bytes) {
      size_t want = std::min(kChunk, max_bytes - data.size());
      size_t have = data.size();
      data.resize(have + want);
      ssize_t n = ::pread(fd.get(), data.data() + have, want, static_cast<off_t>(offset + have));
      if (n < 0 && errno == EINTR) {
        data.resize(have);
        continue;
      }
      if (n < 0) return ErrnoStatus("cannot read", path, errno);
      data.resize(have + static_cast<size_t>(n));
      if (n == 0) break;
    }
    // The chunks reserved 64 to 128 KB: a tick reads every running trial's log at once (ReadMany) and
    // holds the results together, so 10,000 one-line reads kept 1.3 GB (issue 42).
    data.shrink_to_fit();
    return data;
  }

  std::string Describe() const override { return "local"; }

 private:
  // Under a random name made with O_EXCL|O_NOFOLLOW: another user who can write to the folder
  // cannot plant a link there for us to write through (base/private_file.h).
  static Status WriteTemp(const std::string& path, std::string_view content, int mode, std::string* tmp_out) {
    std::string tmp;
    auto created = CreateTempBeside(path, 0600, &tmp);
    if (!created.ok()) return created.status();
    *tmp_out = tmp;
    Fd fd(created->release());
    size_t done = 0;
    while (done < content.size()) {
      ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) return ErrnoStatus("cannot write", tmp, errno);
      done += static_cast<size_t>(n);
    }
    // fchmod, not the open() mode: the umask would strip bits the caller asked for.
    if (::fchmod(fd.get(), static_cast<mode_t>(mode)) != 0) return ErrnoStatus("cannot chmod", tmp, errno);
    // close() is where NFS reports a failed write.
    if (::close(fd.release()) != 0) return ErrnoStatus("cannot write", tmp, errno);
    return Status::OK();
  }
};

}  // namespace

std::unique_ptr<Transport> NewLocalTransport() { return std::make_unique<LocalTransport>(); }

}  // namespace sweep::slurm
