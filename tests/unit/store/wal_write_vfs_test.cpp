// The ledger's VFS: a commit's log reaches the file in one write (or a few, past the buffer),
// another connection reads every committed row at once, pages a big transaction spilled and
// reads back are right, and the database stays sound. Killing a writer after its commits is
// tested by StoreDurability.HardKill and the daemon's Durability tests, which open the store,
// and with it this VFS.
#include "store/wal_write_vfs.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "store/sqlite_db.hpp"
#include "store_fixtures.hpp"

namespace ramguard {
namespace {

using testing::TempDir;

std::unique_ptr<SqliteDb> open_db(const std::filesystem::path& file, const char* vfs) {
  auto db = SqliteDb::open(file, vfs);
  EXPECT_TRUE(db) << db.error().message;
  if (!db) return nullptr;
  auto mode = (*db)->query("PRAGMA journal_mode = WAL", "test");
  EXPECT_TRUE(mode && mode->step());
  EXPECT_TRUE((*db)->exec(
      "PRAGMA synchronous = NORMAL; CREATE TABLE IF NOT EXISTS rows (n INTEGER PRIMARY KEY, "
      "payload BLOB NOT NULL)",
      "test"));
  return std::move(*db);
}

// `count` rows of a page each (3,000 bytes), from `first`, in one transaction.
void insert_rows(SqliteDb& db, int first, int count) {
  ASSERT_TRUE(db.begin("test"));
  for (int n = first; n < first + count; ++n) {
    auto q = db.query("INSERT INTO rows (n, payload) VALUES (?1, randomblob(3000))", "test");
    ASSERT_TRUE(q);
    q->bind(1, static_cast<std::int64_t>(n));
    ASSERT_TRUE(q->run());
  }
  ASSERT_TRUE(db.commit("test"));
}

std::int64_t scalar(SqliteDb& db, const char* sql) {
  auto v = db.scalar_int64(sql, "test");
  EXPECT_TRUE(v) << v.error().message;
  return v ? *v : -1;
}

TEST(WalWriteVfs, ACommitsLogIsOneWriteAndAnotherConnectionReadsItAtOnce) {
  TempDir dir;
  const auto file = dir.path() / "ledger.db";
  auto writer = open_db(file, coalescing_wal_vfs());
  ASSERT_TRUE(writer);
  auto reader = open_db(file, nullptr);  // SQLite's own VFS, as the checkpoint thread uses
  ASSERT_TRUE(reader);

  insert_rows(*writer, 0, 1);  // the log's first commit also writes its header, and syncs it
  for (int commit = 1; commit <= 3; ++commit) {
    const WalWriteCounts before = wal_write_counts();
    insert_rows(*writer, commit * 20, 20);  // ~21 pages: ~42 writes asked for, ~87 KiB of log
    const WalWriteCounts after = wal_write_counts();
    EXPECT_GE(after.requested - before.requested, 40u);
    EXPECT_EQ(after.written - before.written, 1u);
    // The writer is still open: the rows are in the file, not in its buffer.
    EXPECT_EQ(scalar(*reader, "SELECT count(*) FROM rows"), 1 + commit * 20);
  }
  EXPECT_GE(std::filesystem::file_size(file.string() + "-wal"), 20u * 4096u);
}

TEST(WalWriteVfs, ABigCommitIsWrittenInBufferSizedWrites) {
  TempDir dir;
  const auto file = dir.path() / "ledger.db";
  auto writer = open_db(file, coalescing_wal_vfs());
  ASSERT_TRUE(writer);
  const WalWriteCounts before = wal_write_counts();
  insert_rows(*writer, 0, 400);  // ~1.6 MiB of log: thirteen 128 KiB buffers
  const WalWriteCounts after = wal_write_counts();
  const auto requested = after.requested - before.requested;
  const auto written = after.written - before.written;
  EXPECT_GE(requested, 800u);
  EXPECT_GE(written, 12u);
  EXPECT_LE(written, 16u);
  auto reader = open_db(file, nullptr);
  ASSERT_TRUE(reader);
  EXPECT_EQ(scalar(*reader, "SELECT count(*) FROM rows"), 400);
}

TEST(WalWriteVfs, SpilledPagesAreReadBackRightAndTheDatabaseStaysSound) {
  TempDir dir;
  const auto file = dir.path() / "ledger.db";
  auto writer = open_db(file, coalescing_wal_vfs());
  ASSERT_TRUE(writer);
  // A ten-page cache: the transaction below spills dirty pages to the log before its commit,
  // then reads them back to change them again.
  ASSERT_TRUE(writer->exec("PRAGMA cache_size = 10", "test"));
  ASSERT_TRUE(writer->begin("test"));
  for (int n = 0; n < 200; ++n) {
    auto q = writer->query("INSERT INTO rows (n, payload) VALUES (?1, zeroblob(3000))", "test");
    ASSERT_TRUE(q);
    ASSERT_TRUE(q->bind(1, static_cast<std::int64_t>(n)).run());
  }
  // Reading the first rows evicts (spills) the last ones; reading those again reads the log,
  // where the newest frames are still in the VFS's buffer.
  EXPECT_EQ(scalar(*writer, "SELECT sum(length(payload)) FROM rows WHERE n < 100"), 300'000);
  EXPECT_EQ(scalar(*writer, "SELECT sum(length(payload)) FROM rows WHERE n >= 150"), 150'000);
  ASSERT_TRUE(writer->exec("UPDATE rows SET payload = randomblob(2000) WHERE n % 3 = 0", "test"));
  ASSERT_TRUE(writer->commit("test"));
  writer.reset();  // closed: the next connection replays the log from the file alone

  auto reader = open_db(file, nullptr);
  ASSERT_TRUE(reader);
  EXPECT_EQ(scalar(*reader, "SELECT count(*) FROM rows"), 200);
  EXPECT_EQ(scalar(*reader, "SELECT count(*) FROM rows WHERE length(payload) = 2000"), 67);
  EXPECT_EQ(scalar(*reader, "SELECT count(*) FROM rows WHERE length(payload) = 3000"), 133);
  auto check = reader->query("PRAGMA integrity_check", "test");
  ASSERT_TRUE(check);
  auto row = check->step();
  ASSERT_TRUE(row && *row);
  EXPECT_EQ(check->text(0), "ok");
}

TEST(WalWriteVfs, OtherFilesAndTheNameAreSQLitesOwn) {
  EXPECT_STREQ(coalescing_wal_vfs(), "ramguard-wal");
  EXPECT_EQ(coalescing_wal_vfs(), coalescing_wal_vfs());  // registered once
  TempDir dir;
  // A rollback-journal database through the VFS: no log, every write goes through as asked.
  const auto file = dir.path() / "plain.db";
  auto db = SqliteDb::open(file, coalescing_wal_vfs());
  ASSERT_TRUE(db);
  const WalWriteCounts before = wal_write_counts();
  ASSERT_TRUE((*db)->exec("CREATE TABLE t (n INTEGER); INSERT INTO t VALUES (1)", "test"));
  EXPECT_EQ(wal_write_counts().requested, before.requested);
  EXPECT_EQ(scalar(**db, "SELECT n FROM t"), 1);
}

// store.coalesce_wal_writes chooses the VFS: the store's writes go through this one only when
// it is on (the store tests run on both, see tests/unit/store/CMakeLists.txt).
TEST(WalWriteVfs, TheStoreOptionChoosesIt) {
  for (const bool coalesce : {false, true}) {
    TempDir dir;
    const WalWriteCounts before = wal_write_counts();
    auto store = testing::open_store(dir.path(), StoreOptions{.coalesce_wal_writes = coalesce});
    ASSERT_NE(store, nullptr);
    ASSERT_TRUE(store->begin_run(testing::sample_ledger("vfs")).ok());
    store.reset();
    EXPECT_EQ(wal_write_counts().requested > before.requested, coalesce) << coalesce;
  }
}

}  // namespace
}  // namespace ramguard
