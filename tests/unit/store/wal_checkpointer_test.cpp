// The ledger's checkpoints on their own thread: the writer's commits no longer checkpoint, the
// log stays bounded while the writer commits as fast as it can, and nothing is lost.
#include "store/wal_checkpointer.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>

#include "store/sqlite_db.hpp"
#include "store/wal_write_vfs.hpp"
#include "store_fixtures.hpp"

namespace ramguard {
namespace {

using testing::TempDir;

// A WAL database with one table, opened and configured as the store opens its connection
// (through the VFS that writes a commit's log at once, while the thread reads it with SQLite's).
std::unique_ptr<SqliteDb> open_wal_db(const std::filesystem::path& file) {
  auto db = SqliteDb::open(file, coalescing_wal_vfs());
  EXPECT_TRUE(db) << db.error().message;
  if (!db) return nullptr;
  EXPECT_TRUE((*db)->exec("PRAGMA busy_timeout = 2000", "test"));
  auto mode = (*db)->query("PRAGMA journal_mode = WAL", "test");
  EXPECT_TRUE(mode && mode->step());
  EXPECT_TRUE(
      (*db)->exec("PRAGMA synchronous = NORMAL; CREATE TABLE IF NOT EXISTS rows (n "
                  "INTEGER PRIMARY KEY, payload BLOB NOT NULL)",
                  "test"));
  return std::move(*db);
}

// One commit of one row whose payload fills most of a page: a frame or two of log per commit.
void insert_row(SqliteDb& db, int n) {
  auto q = db.query("INSERT INTO rows (n, payload) VALUES (?1, zeroblob(3000))", "test");
  ASSERT_TRUE(q);
  q->bind(1, static_cast<std::int64_t>(n));
  ASSERT_TRUE(q->run());
}

std::uintmax_t size_of(const std::filesystem::path& file) {
  std::error_code ec;
  const auto size = std::filesystem::file_size(file, ec);
  return ec ? 0 : size;
}

std::filesystem::path wal_of(const std::filesystem::path& file) {
  return file.string() + "-wal";
}

TEST(WalCheckpointer, TheWritersCommitsNoLongerCheckpoint) {
  TempDir dir;
  const auto file = dir.path() / "ledger.db";
  auto db = open_wal_db(file);
  ASSERT_TRUE(db);
  const auto empty_db_bytes = size_of(file);
  {
    // A threshold never reached: only SQLite's automatic checkpoint (at 1,000 frames) could
    // copy the log into the file, and it is off while the checkpointer runs.
    auto checkpointer = WalCheckpointer::start(
        db->handle(), file, {.threshold_frames = 1'000'000'000, .restart_frames = 1'000'000'000});
    ASSERT_TRUE(checkpointer) << checkpointer.error().message;
    for (int n = 0; n < 1500; ++n) insert_row(*db, n);
    EXPECT_EQ(size_of(file), empty_db_bytes) << "a commit checkpointed on the writer's thread";
    EXPECT_GT(size_of(wal_of(file)), 1500u * 4096u);
    EXPECT_EQ((*checkpointer)->checkpoints(), 0u);
  }
  // Stopped: the writer checkpoints by itself again, at its next commit past the threshold.
  insert_row(*db, 1500);
  EXPECT_GT(size_of(file), 1500u * 3000u);
}

TEST(WalCheckpointer, KeepsTheLogBoundedWhileTheWriterCommitsAsFastAsItCan) {
  TempDir dir;
  const auto file = dir.path() / "ledger.db";
  auto db = open_wal_db(file);
  ASSERT_TRUE(db);
  constexpr int kRows = 4000;
  constexpr int kRestartFrames = 200;
  {
    auto checkpointer = WalCheckpointer::start(
        db->handle(), file, {.threshold_frames = 20, .restart_frames = kRestartFrames});
    ASSERT_TRUE(checkpointer) << checkpointer.error().message;
    for (int n = 0; n < kRows; ++n) insert_row(*db, n);
    // The thread catches up once the writer stops.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((*checkpointer)->checkpoints() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    EXPECT_GT((*checkpointer)->checkpoints(), 0u);
    std::printf(
        "[ checkpoints ] %d commits: %llu on the thread, %llu by the writer, log file "
        "%ju bytes\n",
        kRows, static_cast<unsigned long long>((*checkpointer)->checkpoints()),
        static_cast<unsigned long long>((*checkpointer)->writer_checkpoints()),
        size_of(wal_of(file)));
  }
  // Without checkpoints the log would hold every commit (16 MB and more); the file keeps its
  // largest length, which never passes twice the restart bound (and one commit's frames).
  EXPECT_LE(size_of(wal_of(file)), (2u * kRestartFrames + 8u) * (4096u + 24u) + 32u);
  EXPECT_GT(size_of(file), static_cast<std::uintmax_t>(kRows / 2) * 3000u)
      << "the rows never reached the database file";

  // Everything committed is there, read by a connection of its own.
  db.reset();
  auto reader = SqliteDb::open(file);
  ASSERT_TRUE(reader);
  auto count = (*reader)->scalar_int64("SELECT count(*) FROM rows", "test");
  ASSERT_TRUE(count);
  EXPECT_EQ(*count, kRows);
}

TEST(WalCheckpointer, ANameThatCannotBeOpenedIsAnError) {
  TempDir dir;
  const auto file = dir.path() / "ledger.db";
  auto db = open_wal_db(file);
  ASSERT_TRUE(db);
  auto checkpointer = WalCheckpointer::start(db->handle(), dir.path() / "missing" / "ledger.db");
  ASSERT_FALSE(checkpointer);
  EXPECT_NE(checkpointer.error().message.find("checkpoint connection"), std::string::npos)
      << checkpointer.error().message;
}

}  // namespace
}  // namespace ramguard
