// Writing a file so that readers see the old one or the new one, never a part: written under a
// random temporary name beside its final one (created with O_EXCL|O_NOFOLLOW, base/private_file.h,
// so no planted link or file can stand in for it) and renamed into place. The one such helper (the
// report files, trials.csv; the transports write the cluster's files their own way).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/private_file.h"
#include "base/status.h"

namespace sweep {

// Renamed into place by Commit(); the temporary file is removed if not committed. The file's mode
// is 0666 less the umask (a report is as private as the user's other files), or `mode` exactly
// (set with fchmod) when given. rename() replaces a link at the final path, never its target.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path, std::optional<mode_t> mode = std::nullopt);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  bool ok() const { return status_.ok(); }
  // Why the file cannot be written (ok() false), naming the path.
  const Status& status() const { return status_; }
  void Append(std::string_view text);
  Status Commit();

 private:
  void Flush();

  std::string path_, tmp_;
  std::optional<mode_t> mode_;
  FileDescriptor fd_;
  std::string buffer_;
  Status status_;
  bool committed_ = false;
};

// The whole of `content` to `path` through an AtomicFile.
Status WriteFileAtomically(const std::string& path, std::string_view content);

}  // namespace sweep
