// Atomic file replacement; see atomic_file.h.
#include "base/atomic_file.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

namespace sweep {
namespace fs = std::filesystem;

AtomicFile::AtomicFile(std::string path)
    : path_(std::move(path)),
      tmp_(path_ + ".tmp-" + std::to_string(::getpid())),
      out_(tmp_, std::ios::binary | std::ios::trunc) {}

AtomicFile::~AtomicFile() {
  if (!committed_) {
    out_.close();
    std::error_code ec;
    fs::remove(tmp_, ec);
  }
}

Status AtomicFile::Commit() {
  out_.close();
  if (out_.fail()) return Status::IOError("cannot write " + tmp_);
  std::error_code ec;
  fs::permissions(tmp_, fs::perms(0644), fs::perm_options::replace, ec);
  if (ec) return Status::IOError("cannot chmod " + tmp_ + ": " + ec.message());
  fs::rename(tmp_, path_, ec);
  if (ec) return Status::IOError("cannot rename " + tmp_ + " to " + path_ + ": " + ec.message());
  committed_ = true;
  return Status::OK();
}

Status WriteFileAtomically(const std::string& path, std::string_view content) {
  AtomicFile file(path);
  file.Append(content);
  return file.Commit();
}

}  // namespace sweep
