// Checkpointer: a WAL database's checkpoints on a thread of its own, with a connection of its own, instead of
// in the commit that takes the WAL past the threshold. A run's tick at 10,000 running trials writes ~35,000
// WAL frames: with SQLite's automatic checkpoint, every tick's commit also copied them into the database and
// waited for two fsyncs (about 0.4 s of the tick's ingest, bench/README.md, issue 42). A PASSIVE checkpoint
// runs beside readers and the writer; what it has not copied stays in the WAL, so nothing is lost whatever it
// does. Internal to store/ (SqliteStore::AppendMetricsMany starts it). Module store/: includes sqlite3.h.
#pragma once

#include <sqlite3.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/status.h"

namespace sweep::store {

class Checkpointer {
 public:
  // WAL frames after which a commit asks for a checkpoint (kSqlConnectionPragmas' wal_autocheckpoint).
  static constexpr int kPages = 10000;
  // When the thread has fallen this far behind, the commit checkpoints itself, as SQLite would: the WAL stays
  // bounded.
  static constexpr int kBehindPages = 8 * kPages;

  // Opens its connection to `path` (a WAL database) and starts the thread.
  static Result<std::unique_ptr<Checkpointer>> Start(const std::string& path);
  // Stops the thread (after the checkpoint it is doing, if any) and closes its connection.
  ~Checkpointer();
  Checkpointer(const Checkpointer&) = delete;
  Checkpointer& operator=(const Checkpointer&) = delete;

  // A sqlite3_wal_hook for the writer's connection (`self`: this): a commit that leaves the WAL at `pages`
  // frames or more wakes the thread.
  static int OnCommit(void* self, sqlite3* db, const char* name, int pages);
  // Checkpoints the thread has done (for tests).
  int done() const;

 private:
  explicit Checkpointer(sqlite3* db) : db_(db) {}
  void Loop();

  sqlite3* db_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool wanted_ = false, stop_ = false;
  int done_ = 0;
  std::thread thread_;
};

}  // namespace sweep::store
