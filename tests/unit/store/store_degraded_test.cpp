// The ledger's honest degraded states: writability follows the disk (full, then space back),
// an undecodable active run is skipped and ended lost instead of failing recovery, reservation
// owners persist (and a schema 1 ledger migrates with its rows kept as root's).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "store/schema.hpp"
#include "store/store.hpp"
#include "store_fixtures.hpp"

namespace ramguard {
namespace {

using ::testing::HasSubstr;
using testing::open_store;
using testing::TempDir;

void raw_sql(const std::filesystem::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(h, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(h);
  sqlite3_close(h);
}

std::string state_of(const std::filesystem::path& db, const std::string& run_id) {
  sqlite3* h = nullptr;
  std::string state = "(none)";
  if (sqlite3_open(db.c_str(), &h) == SQLITE_OK) {
    sqlite3_stmt* q = nullptr;
    sqlite3_prepare_v2(h, "SELECT state FROM runs WHERE run_id = ?1", -1, &q, nullptr);
    sqlite3_bind_text(q, 1, run_id.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(q) == SQLITE_ROW) {
      state = reinterpret_cast<const char*>(sqlite3_column_text(q, 0));
    }
    sqlite3_finalize(q);
  }
  sqlite3_close(h);
  return state;
}

TEST(StoreDegraded, FullDiskMakesTheStoreUnwritableUntilAWriteSucceeds) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  std::vector<bool> seen;
  store->set_writable_listener([&](bool writable) { seen.push_back(writable); });
  EXPECT_TRUE(store->writable());
  ASSERT_TRUE(store->begin_run(testing::sample_ledger("r")).ok());
  // The size cap behaves like a full disk.
  ASSERT_TRUE(store->set_max_db_bytes(1).ok());
  Status failed = ok_status();
  for (std::uint64_t seq = 10; seq < 2000 && failed.ok(); ++seq) {
    failed = store->append_mark(
        "r", testing::mark(seq, MarkKind::kPhaseBegin, std::string(2000, 'p'), 1));
  }
  ASSERT_FALSE(failed.ok());
  EXPECT_FALSE(store->writable());
  EXPECT_THAT(store->unwritable_reason(), HasSubstr("disk full"));
  EXPECT_FALSE(store->opened_read_only());
  // Reads still work.
  EXPECT_TRUE(store->load_run("r").ok());
  ASSERT_TRUE(store->set_max_db_bytes(0).ok());
  ASSERT_TRUE(store->append_mark("r", testing::mark(5000, MarkKind::kPhaseBegin, "after", 1)).ok());
  EXPECT_TRUE(store->writable());
  EXPECT_TRUE(store->unwritable_reason().empty());
  EXPECT_EQ(seen, (std::vector<bool>{true, false, true}));
}

TEST(StoreDegraded, AnUndecodableActiveRunIsSkippedAndEndedLost) {
  TempDir dir;
  {
    auto store = open_store(dir.path());
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->begin_run(testing::full_ledger("bad")).ok());
    ASSERT_TRUE(store->begin_run(testing::sample_ledger("bad-row")).ok());
    ASSERT_TRUE(store->begin_run(testing::sample_ledger("good")).ok());
  }
  // One run with an undecodable mark, one whose own row cannot be decoded.
  raw_sql(dir.path() / Store::kFileName,
          "UPDATE marks SET kind = 'no-such-kind' WHERE run_id = 'bad'; "
          "UPDATE runs SET base_source = 'no-such-source' WHERE run_id = 'bad-row'");
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  auto active = store->load_active_runs();
  ASSERT_TRUE(active.ok()) << active.error().message;
  ASSERT_EQ(active->size(), 1u);
  EXPECT_EQ(active->front().info.run_id, "good");
  // Ended lost, so it is not tried again at the next start.
  for (const char* id : {"bad", "bad-row", "good"}) {
    EXPECT_EQ(state_of(dir.path() / Store::kFileName, id),
              std::string(id) == "good" ? "active" : "lost")
        << id;
  }
  auto again = store->load_active_runs();
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->size(), 1u);
}

TEST(StoreDegraded, ReservationOwnersPersistAndSchemaOneRowsMigrateAsRoots) {
  TempDir dir;
  const auto db_file = dir.path() / Store::kFileName;
  {
    // A schema 1 ledger with a reservation row, as an older ramguardd left it.
    auto db = SqliteDb::open(db_file);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE(migrate_schema(**db, schema_migrations().first(1)).ok());
    ASSERT_TRUE(
        (*db)->exec("INSERT INTO reservations VALUES ('rsv-old', 'j', 5, '', 1, 2)", "t").ok());
  }
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->save_reservation({"rsv-new", "j", 7, {}, "", 1000, 3, 4}).ok());
  auto rows = store->load_reservations();
  ASSERT_TRUE(rows.ok()) << rows.error().message;
  ASSERT_EQ(rows->size(), 2u);
  EXPECT_EQ((*rows)[0].id, "rsv-old");
  EXPECT_EQ((*rows)[0].owner_uid, 0u);
  EXPECT_EQ((*rows)[1].owner_uid, 1000u);
  // Rows from before the estimate sources (schema 4) read as given estimates without a plan.
  EXPECT_EQ((*rows)[0].source, EstimateSource{});
  EXPECT_EQ((*rows)[0].source.text(), "given");
}

}  // namespace
}  // namespace ramguard
