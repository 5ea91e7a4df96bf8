// statfs-based filesystem kinds; see filesystem.h.
#include "base/filesystem.h"

#include <sys/vfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>

namespace sweep {
namespace {

// f_type magic numbers (linux/magic.h and the filesystems' own headers, which not every machine has).
struct Magic {
  unsigned long value;
  const char* name;
};
constexpr Magic kNetworkFilesystems[] = {
    {0x6969, "nfs"},     {0x0BD00BD0, "lustre"}, {0x47504653, "gpfs"},  {0xFF534D42, "cifs"},  {0xFE534D42, "smb2"},
    {0x517B, "smb"},     {0x65735546, "fuse"},   {0x00C36400, "ceph"},  {0x01021997, "9p"},    {0x19830326, "beegfs"},
    {0x6B414653, "afs"}, {0x5346414F, "afs"},    {0x013111A8, "ibrix"}, {0xAAD7AAEA, "panfs"}, {0x73757245, "coda"},
};

}  // namespace

std::string NetworkFilesystem(const std::string& path) {
  struct statfs st;
  std::string at = path;
  if (::statfs(at.c_str(), &st) != 0) {
    at = std::filesystem::path(path).parent_path().string();
    if (at.empty()) at = ".";
    if (::statfs(at.c_str(), &st) != 0) return "";
  }
  // f_type's width and signedness differ between architectures: compare its low 32 bits.
  unsigned long type = static_cast<unsigned long>(st.f_type) & 0xFFFFFFFFul;
  for (const Magic& m : kNetworkFilesystems) {
    if (type == m.value) return m.name;
  }
  return "";
}

std::string LockFailure(const std::string& what, int err) {
  const char* name = err == ENOSYS       ? "ENOSYS"
                     : err == ENOLCK     ? "ENOLCK"
                     : err == EOPNOTSUPP ? "EOPNOTSUPP"
                     : err == EINVAL     ? "EINVAL"
                     : err == EIO        ? "EIO"
                     : err == EACCES     ? "EACCES"
                     : err == EBADF      ? "EBADF"
                                         : nullptr;
  std::string code = name ? std::string(name) : "errno " + std::to_string(err);
  return what + " failed with " + code + " (" + std::strerror(err) +
         "): this filesystem does not provide file locks here, which is not another run holding them. Keep the "
         "study database on a local disk ([study] database = a local path), or on a filesystem mounted with "
         "locks (NFS with lockd running, Lustre with -o flock)";
}

}  // namespace sweep
