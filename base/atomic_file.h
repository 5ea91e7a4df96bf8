// Writing a file so that readers see the old one or the new one, never a part: written under a
// temporary name beside its final one and renamed into place. The one such helper (the report
// files, trials.csv; the transports write the cluster's files their own way). Uses the standard
// library only.
#pragma once

#include <fstream>
#include <string>
#include <string_view>

#include "base/status.h"

namespace sweep {

// Renamed into place by Commit() with mode 0644; the temporary file is removed if not committed.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  bool ok() const { return out_.good(); }
  void Append(std::string_view text) { out_.write(text.data(), static_cast<std::streamsize>(text.size())); }
  Status Commit();

 private:
  std::string path_, tmp_;
  std::ofstream out_;
  bool committed_ = false;
};

// The whole of `content` to `path` through an AtomicFile.
Status WriteFileAtomically(const std::string& path, std::string_view content);

}  // namespace sweep
