// A WAL database's checkpoints on a thread of its own; see checkpointer.h.
#include "store/checkpointer.h"

#include <utility>

namespace sweep::store {

Result<std::unique_ptr<Checkpointer>> Checkpointer::Start(const std::string& path) {
  sqlite3* db = nullptr;
  // NOMUTEX: the connection is used by the thread alone.
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    return Status::IOError(path + ": open a connection for checkpoints: " + message);
  }
  sqlite3_busy_timeout(db, 1000);
  // A connection that has read nothing does not know the database is in WAL mode, and its checkpoints do
  // nothing: one read opens the WAL.
  rc = sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    std::string message = sqlite3_errmsg(db);
    sqlite3_close(db);
    return Status::IOError(path + ": read through the connection for checkpoints: " + message);
  }
  std::unique_ptr<Checkpointer> c(new Checkpointer(db));
  c->thread_ = std::thread([p = c.get()] { p->Loop(); });
  return c;
}

Checkpointer::~Checkpointer() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
  sqlite3_close(db_);
}

int Checkpointer::OnCommit(void* self, sqlite3* db, const char* name, int pages) {
  auto* c = static_cast<Checkpointer*>(self);
  if (pages >= kBehindPages) {
    // Fallen behind (a slow disk, a reader holding old frames): as SQLite's automatic checkpoint would.
    sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  } else if (pages >= kPages) {
    {
      std::lock_guard<std::mutex> lock(c->mu_);
      c->wanted_ = true;
    }
    c->wake_.notify_one();
  }
  return SQLITE_OK;
}

int Checkpointer::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void Checkpointer::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return wanted_ || stop_; });
    if (stop_) return;
    wanted_ = false;
    lock.unlock();
    // Busy (another process checkpointing, or the writer's fallback): the next commit asks again.
    int rc = sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    lock.lock();
    if (rc == SQLITE_OK) ++done_;
  }
}

}  // namespace sweep::store
