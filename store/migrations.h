// The schema: numbered migrations tracked in PRAGMA user_version, applied in one transaction.
// Internal to store/ (scripts/include-loops.py checks that no other folder includes it).
// Module store/: the only one that includes sqlite3.h.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>

#include "base/status.h"

namespace sweep::store {

// A database whose schema is newer than this binary's, or one with no schema of ours.
Status TooNew(const std::string& path, int64_t version);
Status NotOurs(const std::string& path);

// Applies the migrations the database lacks, in one transaction with the version bump, so a crash
// leaves either the old schema or the new one.
Status Migrate(sqlite3* db, const std::string& path);

}  // namespace sweep::store
