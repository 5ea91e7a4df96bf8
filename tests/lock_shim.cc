// LD_PRELOAD shim for tests/lease_cli_test.cc: makes file locks fail with an errno, as a
// filesystem without locks does (Lustre without flock: ENOSYS, NFS without lockd: ENOLCK).
// SWEEP_LOCK_SHIM_ERRNO=ENOSYS|ENOLCK picks the errno; SWEEP_LOCK_SHIM=flock|fcntl picks the
// call (flock: the run's lock file; fcntl: SQLite's byte-range locks). Other fcntl commands pass.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>

namespace {

int ShimErrno(const char* call) {
  const char* which = std::getenv("SWEEP_LOCK_SHIM");
  const char* err = std::getenv("SWEEP_LOCK_SHIM_ERRNO");
  if (!which || !err || std::strcmp(which, call) != 0) return 0;
  return std::strcmp(err, "ENOLCK") == 0 ? ENOLCK : ENOSYS;
}

bool IsLockCommand(int cmd) {
  return cmd == F_SETLK || cmd == F_SETLKW || cmd == F_GETLK || cmd == F_OFD_SETLK || cmd == F_OFD_SETLKW ||
         cmd == F_OFD_GETLK;
}

using FcntlFn = int (*)(int, int, ...);

int ForwardFcntl(const char* name, int fd, int cmd, void* arg) {
  static FcntlFn real_fcntl = reinterpret_cast<FcntlFn>(dlsym(RTLD_NEXT, "fcntl"));
  static FcntlFn real_fcntl64 = reinterpret_cast<FcntlFn>(dlsym(RTLD_NEXT, "fcntl64"));
  FcntlFn real = std::strcmp(name, "fcntl64") == 0 && real_fcntl64 ? real_fcntl64 : real_fcntl;
  if (IsLockCommand(cmd)) {
    if (int e = ShimErrno("fcntl")) {
      errno = e;
      return -1;
    }
  }
  return real(fd, cmd, arg);
}

}  // namespace

extern "C" {

int flock(int fd, int operation) {
  if (int e = ShimErrno("flock")) {
    errno = e;
    return -1;
  }
  static auto real = reinterpret_cast<int (*)(int, int)>(dlsym(RTLD_NEXT, "flock"));
  return real(fd, operation);
}

// Every fcntl command takes at most one argument, an int or a pointer: passed on as a pointer.
int fcntl(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return ForwardFcntl("fcntl", fd, cmd, arg);
}

int fcntl64(int fd, int cmd, ...) {
  va_list ap;
  va_start(ap, cmd);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  return ForwardFcntl("fcntl64", fd, cmd, arg);
}

}  // extern "C"
