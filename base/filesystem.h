// What kind of filesystem a file lives on, as far as locking goes: SQLite's write-ahead log and
// flock need every process on one host's kernel, which a network filesystem does not give.
// Module base/: the vocabulary every module shares; uses the standard library only.
#pragma once

#include <string>

namespace sweep {

// The network filesystem `path` is on ("nfs", "lustre", "gpfs", "cifs", "fuse", ...), or "" for a
// local one. A path that does not exist yet is judged by its directory; one that cannot be
// examined at all counts as local (the open that follows names the error).
std::string NetworkFilesystem(const std::string& path);

// Names the errno of a failed lock call and the way on, for `what` ("flock on X.lock"): the lock
// does not work on that filesystem, which is not another process holding it.
std::string LockFailure(const std::string& what, int err);

}  // namespace sweep
