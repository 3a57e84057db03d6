// The schema's version bookkeeping, forward migrations and the SQLite error mapping.
#include "store/schema.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <array>

#include "store/sqlite_db.hpp"
#include "store_fixtures.hpp"

namespace ramguard {
namespace {

using ::testing::HasSubstr;
using testing::TempDir;

std::unique_ptr<SqliteDb> open_db(const std::filesystem::path& file) {
  auto db = SqliteDb::open(file);
  EXPECT_TRUE(db.ok()) << (db.ok() ? "" : db.error().message);
  return db ? std::move(*db) : nullptr;
}

TEST(Schema, FreshDatabaseGetsCurrentVersionAndApplicationId) {
  TempDir dir;
  auto db = open_db(dir.path() / "x.db");
  ASSERT_TRUE(db);
  ASSERT_TRUE(migrate_schema(*db).ok());
  EXPECT_EQ(*db->scalar_int64("PRAGMA user_version", "t"), current_schema_version());
  EXPECT_EQ(*db->scalar_int64("PRAGMA application_id", "t"), kRamguardApplicationId);
  EXPECT_GE(current_schema_version(), 1);
  // Migrating again is a no-op.
  ASSERT_TRUE(migrate_schema(*db).ok());
  EXPECT_EQ(*db->scalar_int64("PRAGMA user_version", "t"), current_schema_version());
}

TEST(Schema, MigrationsRunForwardFromTheStoredVersion) {
  TempDir dir;
  auto db = open_db(dir.path() / "x.db");
  ASSERT_TRUE(db);
  const std::array<Migration, 3> steps = {
      Migration{"create t", "CREATE TABLE t (a INTEGER)"},
      Migration{"add b", "ALTER TABLE t ADD COLUMN b TEXT DEFAULT 'new'"},
      Migration{"broken", "CREATE TABLE t (a INTEGER)"},  // already exists: fails
  };
  ASSERT_TRUE(migrate_schema(*db, std::span(steps).first(1)).ok());
  EXPECT_EQ(*db->scalar_int64("PRAGMA user_version", "t"), 1);
  ASSERT_TRUE(db->exec("INSERT INTO t (a) VALUES (7)", "t").ok());

  ASSERT_TRUE(migrate_schema(*db, std::span(steps).first(2)).ok());
  EXPECT_EQ(*db->scalar_int64("PRAGMA user_version", "t"), 2);
  auto q = db->query("SELECT a, b FROM t", "t");
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE(*q->step());
  EXPECT_EQ(q->int64(0), 7);
  EXPECT_EQ(q->text(1), "new");

  // A failing step leaves the last good version in place and says which step failed.
  auto failed = migrate_schema(*db, steps);
  ASSERT_FALSE(failed.ok());
  EXPECT_THAT(failed.error().message, HasSubstr("migrating the schema to version 3 (broken)"));
  EXPECT_EQ(*db->scalar_int64("PRAGMA user_version", "t"), 2);
  EXPECT_FALSE(db->in_transaction());
}

TEST(Schema, ErrorMappingNamesFileAndOperation) {
  const std::filesystem::path file = "/var/lib/ramguard/ramguard.db";
  EXPECT_EQ(sqlite_error(SQLITE_FULL, "database or disk is full", file, "appending mark 3").message,
            "disk full while appending mark 3 (/var/lib/ramguard/ramguard.db): database or disk "
            "is full");
  EXPECT_THAT(sqlite_error(SQLITE_CORRUPT, "malformed", file, "loading").message,
              HasSubstr("database file /var/lib/ramguard/ramguard.db is corrupt or not a "
                        "ramguard database"));
  EXPECT_THAT(sqlite_error(SQLITE_NOTADB, "file is not a database", file, "x").message,
              HasSubstr("is corrupt or not a ramguard database"));
  EXPECT_THAT(sqlite_error(SQLITE_READONLY, "readonly", file, "storing run 'r'").message,
              HasSubstr("cannot write /var/lib/ramguard/ramguard.db while storing run 'r'"));
  EXPECT_THAT(sqlite_error(SQLITE_CANTOPEN, "unable to open", file, "opening").message,
              HasSubstr("cannot write /var/lib/ramguard/ramguard.db"));
  EXPECT_THAT(sqlite_error(SQLITE_IOERR_FSYNC, "disk I/O error", file, "commit").message,
              HasSubstr("I/O error on /var/lib/ramguard/ramguard.db while commit"));
  EXPECT_THAT(sqlite_error(SQLITE_BUSY, "database is locked", file, "x").message,
              HasSubstr("locked by another process"));
}

TEST(SqliteDb, UnsignedValuesRoundTripBitExact) {
  TempDir dir;
  auto db = open_db(dir.path() / "x.db");
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->exec("CREATE TABLE v (x INTEGER, y TEXT, z REAL)", "t").ok());
  const std::uint64_t big = 0xFFFF'FFFF'FFFF'FFF0ull;
  {
    auto q = db->query("INSERT INTO v VALUES (?1, ?2, ?3)", "t");
    ASSERT_TRUE(q.ok());
    ASSERT_TRUE(q->bind(1, big).bind(2, std::string("a\0b", 3)).bind_null(3).run().ok());
  }
  auto q = db->query("SELECT x, y, z FROM v", "t");
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE(*q->step());
  EXPECT_EQ(q->uint64(0), big);
  EXPECT_EQ(q->text(1), std::string("a\0b", 3));
  EXPECT_TRUE(q->is_null(2));
}

TEST(SqliteDb, FailedStatementLeavesTheCacheUsable) {
  TempDir dir;
  auto db = open_db(dir.path() / "x.db");
  ASSERT_TRUE(db);
  ASSERT_TRUE(db->exec("CREATE TABLE u (k TEXT PRIMARY KEY)", "t").ok());
  const char* sql = "INSERT INTO u VALUES (?1)";
  ASSERT_TRUE(db->query(sql, "t")->bind(1, "a").run().ok());
  auto dup = db->query(sql, "inserting a duplicate")->bind(1, "a").run();
  ASSERT_FALSE(dup.ok());
  EXPECT_THAT(dup.error().message, HasSubstr("inserting a duplicate"));
  EXPECT_EQ(db->last_failure_code(), SQLITE_CONSTRAINT_PRIMARYKEY);
  EXPECT_TRUE(db->query(sql, "t")->bind(1, "b").run().ok());
  EXPECT_EQ(*db->scalar_int64("SELECT count(*) FROM u", "t"), 2);
  auto bad = db->query("SELECT nope FROM u", "preparing a bad query");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("no such column: nope"));
}

}  // namespace
}  // namespace ramguard
