#pragma once
// The ledger's schema: DDL as numbered forward migrations, tracked in PRAGMA user_version and
// tagged with PRAGMA application_id so a foreign SQLite file is recognised and refused.

#include <cstdint>
#include <span>
#include <string_view>

#include "ramguard/base/result.hpp"
#include "store/sqlite_db.hpp"

namespace ramguard {

// 'RMGD': marks a file as a ramguard ledger.
inline constexpr std::int64_t kRamguardApplicationId = 0x524D4744;

// Migration i (0-based) takes the schema from version i to i + 1.
struct Migration {
  std::string_view description;
  std::string_view sql;
};

// The migrations this build knows; the schema version it writes is their count.
std::span<const Migration> schema_migrations();
std::int64_t current_schema_version();

// Brings the database to the newest version in `migrations`, each step in its own transaction
// (a failed step leaves the previous version intact). Refuses, with a message naming the file:
// a version newer than `migrations` reaches, another application's id, or an untagged file that
// already holds tables (some other program's database).
Status migrate_schema(SqliteDb& db, std::span<const Migration> migrations);
inline Status migrate_schema(SqliteDb& db) {
  return migrate_schema(db, schema_migrations());
}

}  // namespace ramguard
