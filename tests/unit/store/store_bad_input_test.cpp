// Bad input: each failure gives an Error naming the path or id and the problem, and a failed
// write leaves the Store usable.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>

#include <fstream>

#include "store/schema.hpp"
#include "store/store.hpp"
#include "store_fixtures.hpp"

namespace ramguard {
namespace {

using ::testing::HasSubstr;
using testing::open_store;
using testing::TempDir;
using testing::test_vfs;

#define EXPECT_ERROR(result, ...)                                                     \
  do {                                                                                \
    auto&& r_ = (result);                                                             \
    ASSERT_FALSE(r_.ok()) << "expected an error";                                     \
    for (const std::string& part : std::initializer_list<std::string>{__VA_ARGS__}) { \
      EXPECT_THAT(r_.error().message, HasSubstr(part));                               \
    }                                                                                 \
  } while (0)

void write_file(const std::filesystem::path& p, const std::string& content) {
  std::ofstream out(p, std::ios::binary);
  out << content;
}

void raw_sql(const std::filesystem::path& db, const std::string& sql) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(h, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(h);
  sqlite3_close(h);
}

TEST(StoreBadInput, UnknownRunIdIsNamedByEveryCall) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  const std::string id = "no-such-run";
  auto loaded = store->load_run(id);
  EXPECT_ERROR(loaded, "unknown run id 'no-such-run'", store->path().string());
  EXPECT_TRUE(is_unknown_run(loaded.error()));
  const Status writes[] = {
      store->append_mark(id, testing::mark(1, MarkKind::kRunStart, "", 0)),
      store->save_phase(id, PhaseRecord{"load", 0, {}, {}, 0, false}),
      store->save_boundary(id, BoundaryRecord{}),
      store->save_verdict(id, Verdict{}),
      store->update_progress(id, 1, false, {}),
      store->end_run(id, RunState::kEnded, {}, 1, {}),
      store->append_samples(id, std::vector<ProgressSample>{{1, 2, 3, 4, 5, 6}}),
  };
  for (const Status& s : writes) {
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(is_unknown_run(s.error())) << s.error().message;
    EXPECT_THAT(s.error().message, HasSubstr("'no-such-run'"));
  }
  EXPECT_ERROR(store->load_samples(id), "unknown run id 'no-such-run'");
  // Nothing half-written, and the store still works.
  ASSERT_TRUE(store->begin_run(testing::sample_ledger("real")).ok());
  auto runs = store->list_runs(0);
  ASSERT_TRUE(runs.ok());
  EXPECT_EQ(runs->size(), 1u);
}

TEST(StoreBadInput, DuplicatesAndActiveEndAreRefused) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->begin_run(testing::full_ledger("r")).ok());
  EXPECT_ERROR(store->begin_run(testing::full_ledger("r")), "run 'r' is already in");
  EXPECT_ERROR(store->append_mark("r", testing::mark(2, MarkKind::kPhaseBegin, "x", 1)),
               "mark 2 of run 'r' is already in");
  EXPECT_ERROR(store->end_run("r", RunState::kActive, {}, 0, {}), "ending run 'r'", "not active");
  auto loaded = store->load_run("r");
  ASSERT_TRUE(loaded.ok());
  testing::expect_same(testing::full_ledger("r"), *loaded);  // untouched by the failures
  EXPECT_TRUE(store->append_mark("r", testing::mark(5, MarkKind::kRoundEnd, "", 1)).ok());
}

TEST(StoreBadInput, CorruptFileIsRefused) {
  TempDir dir;
  {
    auto store = open_store(dir.path());
    ASSERT_TRUE(store && store->begin_run(testing::full_ledger("r")).ok());
  }
  const auto db = dir.path() / "ramguard.db";
  ASSERT_GT(std::filesystem::file_size(db), 8192u);
  {
    // Scribble over every page after the first: the header survives, the b-trees do not.
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(4096);
    const std::string junk(std::filesystem::file_size(db) - 4096, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  auto store = Store::open(dir.path(), test_vfs());
  EXPECT_ERROR(store, db.string(), "is corrupt or not a ramguard database");
}

TEST(StoreBadInput, CorruptDataPagesAreFoundAtOpenOrWhenRead) {
  TempDir dir;
  {
    auto store = open_store(dir.path());
    ASSERT_TRUE(store && store->begin_run(testing::sample_ledger("r")).ok());
    for (std::uint64_t seq = 1; seq < 400; ++seq) {
      ASSERT_TRUE(store
                      ->append_mark(
                          "r", testing::mark(seq, MarkKind::kPhaseBegin, std::string(100, 'p'), 1))
                      .ok());
    }
  }
  const auto db = dir.path() / "ramguard.db";
  const auto size = std::filesystem::file_size(db);
  ASSERT_GT(size, 16u * 4096u);
  {
    // The schema on page 1 is intact; the last pages (marks) are garbage.
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size - 3 * 4096));
    const std::string junk(3 * 4096, '\x5a');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  EXPECT_ERROR(Store::open(dir.path(), test_vfs()), db.string(),
               "is corrupt or not a ramguard database", "quick_check");
  // Without the check at open, the damage surfaces as an Error when the run is read.
  auto store = Store::open(dir.path(), test_vfs(StoreOptions{.verify_on_open = false}));
  ASSERT_TRUE(store.ok()) << store.error().message;
  EXPECT_ERROR((*store)->load_run("r"), db.string(), "is corrupt", "while loading run 'r'");
}

TEST(StoreBadInput, TextFileIsNotADatabase) {
  TempDir dir;
  const auto db = dir.path() / "ramguard.db";
  write_file(db, std::string(5000, 'x') + "this is a text file, not SQLite\n");
  auto store = Store::open(dir.path(), test_vfs());
  EXPECT_ERROR(store, db.string(), "is corrupt or not a ramguard database");
}

TEST(StoreBadInput, AnotherApplicationsDatabaseIsRefused) {
  TempDir dir;
  const auto db = dir.path() / "ramguard.db";
  raw_sql(db, "CREATE TABLE invoices (id INTEGER PRIMARY KEY, amount REAL)");
  EXPECT_ERROR(Store::open(dir.path(), test_vfs()), db.string(), "is not a ramguard database");
  raw_sql(db, "PRAGMA application_id = 1234");
  EXPECT_ERROR(Store::open(dir.path(), test_vfs()), db.string(), "is not a ramguard database",
               "application_id 0x4d2");
  // The foreign file was not modified.
  EXPECT_GT(std::filesystem::file_size(db), 0u);
}

TEST(StoreBadInput, NewerSchemaIsRefused) {
  TempDir dir;
  { ASSERT_TRUE(open_store(dir.path())); }
  const auto db = dir.path() / "ramguard.db";
  raw_sql(db, "PRAGMA user_version = 99");
  EXPECT_ERROR(
      Store::open(dir.path(), test_vfs()), db.string(), "schema version 99",
      "newer than this ramguardd understands (" + std::to_string(current_schema_version()) + ")");
}

TEST(StoreBadInput, StateDirUnderARegularFile) {
  // As root chmod does not stop writes; a parent that is a regular file does.
  TempDir dir;
  write_file(dir.path() / "plain-file", "x");
  const auto state = dir.path() / "plain-file" / "state";
  EXPECT_ERROR(Store::open(state, test_vfs()), "cannot create state directory", state.string(),
               "Not a directory");
}

TEST(StoreBadInput, StateDirThatIsAFile) {
  TempDir dir;
  const auto state = dir.path() / "state";
  write_file(state, "x");
  EXPECT_ERROR(Store::open(state, test_vfs()), state.string(), "is not a directory");
}

TEST(StoreBadInput, DatabasePathThatIsADirectoryCannotBeWritten) {
  TempDir dir;
  std::filesystem::create_directories(dir.path() / "ramguard.db");
  EXPECT_ERROR(Store::open(dir.path(), test_vfs()), "cannot write",
               (dir.path() / "ramguard.db").string());
}

TEST(StoreBadInput, NewStateDirIsCreatedWithMode0750) {
  TempDir dir;
  const auto state = dir.path() / "a" / "state";
  ASSERT_TRUE(open_store(state));
  struct stat st {};
  ASSERT_EQ(::stat(state.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0750u);
  EXPECT_TRUE(std::filesystem::exists(state / "ramguard.db"));
}

TEST(StoreBadInput, FullDiskFailsCleanlyAndTheStoreRecovers) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store && store->begin_run(testing::sample_ledger("r")).ok());
  // Cap the file at its current size: the next page it needs is "beyond the disk".
  ASSERT_TRUE(store->set_max_db_bytes(1).ok());
  std::vector<ProgressSample> batch;
  for (std::int64_t i = 0; i < 5000; ++i) {
    batch.push_back({i * 1000, 1'000'000'000 + static_cast<std::uint64_t>(i), 1, 2, 3, 4});
  }
  EXPECT_ERROR(store->append_samples("r", batch), "disk full while appending 5000 samples",
               "run 'r'", store->path().string());
  // Reads still work and the failed batch left nothing behind.
  auto none = store->load_samples("r");
  ASSERT_TRUE(none.ok()) << none.error().message;
  EXPECT_TRUE(none->empty());
  // Once space is back, the same Store object writes again.
  ASSERT_TRUE(store->set_max_db_bytes(0).ok());
  auto retried = store->append_samples("r", batch);
  ASSERT_TRUE(retried.ok()) << retried.error().message;
  EXPECT_TRUE(store->append_mark("r", testing::mark(1, MarkKind::kRunStart, "", 0)).ok());
  auto all = store->load_samples("r");
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->size(), batch.size());
}

TEST(StoreBadInput, SizeCapFromOptionsApplies) {
  TempDir dir;
  {
    auto store = open_store(dir.path());
    ASSERT_TRUE(store && store->begin_run(testing::sample_ledger("r")).ok());
  }
  auto store = open_store(dir.path(), test_vfs(StoreOptions{.max_db_bytes = 4096}));
  ASSERT_TRUE(store);
  std::vector<ProgressSample> batch(5000);
  for (std::size_t i = 0; i < batch.size(); ++i) batch[i].at_unix_ms = static_cast<std::int64_t>(i);
  EXPECT_ERROR(store->append_samples("r", batch), "disk full while");
  auto loaded = store->load_run("r");
  EXPECT_TRUE(loaded.ok());
}

}  // namespace
}  // namespace ramguard
