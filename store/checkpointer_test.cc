// Checkpointer: a WAL database's checkpoints on a thread of their own; what it copies is in the database file.
#include "store/checkpointer.h"

#include <sqlite3.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "tests/test_util.h"

namespace sweep::store {
namespace {

using sweep::testing::TempDir;

void Exec(sqlite3* db, const char* sql) {
  char* error = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &error);
  INFO((error ? error : ""));
  sqlite3_free(error);
  REQUIRE(rc == SQLITE_OK);
}

int64_t Count(const std::string& path) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, "SELECT count(*) FROM t", -1, &stmt, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(stmt) == SQLITE_ROW);
  int64_t n = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return n;
}

TEST_CASE("Checkpointer: a commit past the threshold has the thread copy the WAL into the database file", "[store]") {
  TempDir dir;
  std::string path = dir.file("c.db");
  sqlite3* writer = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &writer) == SQLITE_OK);
  Exec(writer, "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (x INTEGER)");
  auto checkpointer = Checkpointer::Start(path);
  REQUIRE(checkpointer.ok());
  sqlite3_wal_hook(writer, &Checkpointer::OnCommit, checkpointer->get());
  Exec(writer,
       "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) "
       "INSERT INTO t SELECT i FROM n");
  // Nothing has been checkpointed: the database file alone has no table yet.
  std::string file_alone = dir.file("alone.db");
  std::filesystem::copy_file(path, file_alone);
  CHECK(Count(path) == 5000);  // through the WAL
  {
    sqlite3* db = nullptr;
    REQUIRE(sqlite3_open_v2(file_alone.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "SELECT count(*) FROM t", nullptr, nullptr, nullptr) != SQLITE_OK);
    sqlite3_close(db);
  }
  // A commit that leaves the WAL at the threshold wakes the thread; the writer goes on meanwhile.
  Checkpointer::OnCommit(checkpointer->get(), writer, "main", Checkpointer::kPages);
  Exec(writer, "INSERT INTO t VALUES (0)");
  for (int waited = 0; (*checkpointer)->done() == 0 && waited < 3000; ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // a liveness bound, not a speed target
  }
  REQUIRE((*checkpointer)->done() >= 1);
  // The database file alone now holds what was committed before the checkpoint (the WAL is not copied).
  std::filesystem::remove(file_alone);
  std::filesystem::copy_file(path, file_alone);
  CHECK(Count(file_alone) >= 5000);
  sqlite3_wal_hook(writer, nullptr, nullptr);
  checkpointer->reset();  // stops the thread and closes its connection
  Exec(writer, "INSERT INTO t VALUES (0)");
  sqlite3_close(writer);
  CHECK(Count(path) == 5002);
}

}  // namespace
}  // namespace sweep::store
