// The SQLite plumbing the store's files share: owning pointers, errors as Status, one-off queries,
// the Query wrapper of a prepared statement, and the rows it reads and writes.
// Internal to store/ (scripts/include-loops.py checks that no other folder includes it).
// Module store/: the only one that includes sqlite3.h.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "store/metric_summary.h"
#include "store/store.h"

namespace sweep::store {

struct DbCloser {
  void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
};

using DbPtr = std::unique_ptr<sqlite3, DbCloser>;

struct StmtFinalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};

using StmtPtr = std::unique_ptr<sqlite3_stmt, StmtFinalizer>;

// Maps a failed SQLite call to a Status naming the file and the operation. BUSY means another
// process held the lock past busy_timeout: kUnavailable tells callers to retry, not to give up.
Status SqliteError(sqlite3* db, const std::string& path, std::string_view what, int rc);

// Runs SQL that returns no rows we need: pragmas, migrations, transaction control during Open.
Status ExecScript(sqlite3* db, const std::string& path, const char* sql, std::string_view what);

// The first column of the first row of a one-off query (used before statements are prepared).
Result<StmtPtr> QueryFirstRow(sqlite3* db, const std::string& path, const char* sql, std::string_view what);

Result<int64_t> QueryInt(sqlite3* db, const std::string& path, const char* sql, std::string_view what);

Result<std::string> QueryText(sqlite3* db, const std::string& path, const char* sql, std::string_view what);

// Rolls back if a transaction is still open. SQLite rolls back by itself after some errors
// (SQLITE_FULL, SQLITE_IOERR, ...), and a ROLLBACK then would only add a second error.
void RollbackIfOpen(sqlite3* db);

// One use of a prepared statement. Binds, steps and reads columns; on destruction resets the
// statement and clears its bindings, so it holds no read snapshot (which would stall WAL
// checkpoints) and no stale parameter can leak into the next use.
class Query {
 public:
  Query(sqlite3* db, const std::string& path, sqlite3_stmt* stmt, std::string what)
      : db_(db), path_(path), stmt_(stmt), what_(std::move(what)) {}
  ~Query() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  Query(const Query&) = delete;
  Query& operator=(const Query&) = delete;

  void BindInt(int index, int64_t value) { Check(sqlite3_bind_int64(stmt_, index, value)); }
  void BindReal(int index, double value) { Check(sqlite3_bind_double(stmt_, index, value)); }
  void BindOptReal(int index, const std::optional<double>& value) {
    Check(value ? sqlite3_bind_double(stmt_, index, *value) : sqlite3_bind_null(stmt_, index));
  }
  void BindOptInt(int index, const std::optional<int64_t>& value) {
    Check(value ? sqlite3_bind_int64(stmt_, index, *value) : sqlite3_bind_null(stmt_, index));
  }
  void BindText(int index, std::string_view value) {
    // A null data pointer would bind SQL NULL, not the empty string.
    Check(sqlite3_bind_text64(stmt_, index, value.data() ? value.data() : "", value.size(), SQLITE_TRANSIENT,
                              SQLITE_UTF8));
  }

  // Doubles as a BLOB of 8-byte little-endian IEEE values, whatever the machine's byte order.
  void BindDoubles(int index, const std::vector<double>& values) {
    std::string bytes(values.size() * 8, '\0');
    for (size_t i = 0; i < values.size(); ++i) {
      uint64_t bits;
      std::memcpy(&bits, &values[i], 8);
      for (int b = 0; b < 8; ++b) bytes[i * 8 + b] = static_cast<char>((bits >> (8 * b)) & 0xff);
    }
    Check(sqlite3_bind_blob64(stmt_, index, bytes.data(), bytes.size(), SQLITE_TRANSIENT));
  }

  // True when a row is ready to read, false when the statement is done.
  Result<bool> Step() {
    if (bind_rc_ != SQLITE_OK) return SqliteError(db_, path_, what_, bind_rc_);
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return SqliteError(db_, path_, what_, rc);
  }
  // Calls `row()` for each row the statement yields (read them with Int, Real, Text, ...); an
  // error of the statement, or a Status that is not OK from `row()`, ends it.
  template <typename F>
  Status ForEachRow(F&& row) {
    for (;;) {
      auto ready = Step();
      if (!ready.ok()) return ready.status();
      if (!*ready) return Status::OK();
      if constexpr (std::is_same_v<std::invoke_result_t<F&>, Status>) {
        SWEEP_RETURN_IF_ERROR(row());
      } else {
        static_assert(std::is_void_v<std::invoke_result_t<F&>>, "a row callback returns void or Status");
        row();
      }
    }
  }
  // Ready for the next row of a statement run once per row (bulk inserts): every parameter is
  // bound again, so the bindings are not cleared, and `what` is not built again.
  void Rewind() { sqlite3_reset(stmt_); }
  // For statements whose rows (if any) do not matter.
  Status Run() {
    for (;;) {
      auto row = Step();
      if (!row.ok()) return row.status();
      if (!*row) return Status::OK();
    }
  }

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  // NULL is how SQLite stores NaN.
  double Real(int col) const {
    if (IsNull(col)) return std::numeric_limits<double>::quiet_NaN();
    return sqlite3_column_double(stmt_, col);
  }
  std::optional<double> OptReal(int col) const {
    if (IsNull(col)) return std::nullopt;
    return sqlite3_column_double(stmt_, col);
  }
  std::optional<int64_t> OptInt(int col) const {
    if (IsNull(col)) return std::nullopt;
    return sqlite3_column_int64(stmt_, col);
  }
  // A BindDoubles BLOB (NULL: none).
  std::vector<double> Doubles(int col) const {
    const auto* bytes = static_cast<const unsigned char*>(sqlite3_column_blob(stmt_, col));
    size_t n = static_cast<size_t>(sqlite3_column_bytes(stmt_, col)) / 8;
    std::vector<double> values(bytes ? n : 0);
    for (size_t i = 0; i < values.size(); ++i) {
      uint64_t bits = 0;
      for (int b = 0; b < 8; ++b) bits |= static_cast<uint64_t>(bytes[i * 8 + b]) << (8 * b);
      std::memcpy(&values[i], &bits, 8);
    }
    return values;
  }
  std::string Text(int col) const {
    const unsigned char* text = sqlite3_column_text(stmt_, col);
    if (!text) return std::string();
    return std::string(reinterpret_cast<const char*>(text), static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
  }

 private:
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  // Bind failures are reported by the following Step, which keeps call sites linear.
  void Check(int rc) {
    if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  }

  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* stmt_;
  std::string what_;
  int bind_rc_ = SQLITE_OK;
};

// Columns in kSqlListTrials / kSqlGetTrial order.
TrialRecord ReadTrial(const Query& q);

// Columns in kSqlMetricSeries / kSqlLastMetric order.
MetricRow ReadMetric(const Query& q);

// Columns of kSqlTrialSummary / kSqlStudySummaries from `col` on (after name_id).
void ReadSummary(const Query& q, int col, MetricSummary& m);

// Binds one summary row's 25 values (kSqlWriteSummary's order) from parameter `first` on.
void BindSummaryRow(Query& q, int first, int64_t trial_id, int64_t name_id, const MetricSummary& m);
// Writes one summary row (kSqlWriteSummary).
Status WriteSummaryRow(Query& q, int64_t trial_id, int64_t name_id, const MetricSummary& m);

// Writes bucket `index` of a metric (kSqlWriteBucket).
Status WriteBucketRow(Query& q, int64_t trial_id, int64_t name_id, int64_t index, const SeriesBucket& b);

// Reads the complete buckets of a metric (kSqlBuckets).
Status ReadBuckets(Query& q, int64_t trial_id, int64_t name_id, std::vector<SeriesBucket>& out);

// An ad-hoc statement for the migration, which runs before the store's are prepared.
Result<StmtPtr> Prepare(sqlite3* db, const std::string& path, const char* sql);

}  // namespace sweep::store
