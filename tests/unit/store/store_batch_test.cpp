// Group commit in the store: with batching on, the writes joined between two commit_batch()
// calls are one transaction (invisible to another connection until the COMMIT, all there after
// it); a failed COMMIT rolls all of them back, names their runs, leaves the store usable and
// puts them back in the ledger journal, written before the next write; with
// batching off every write commits before it returns, as before.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <string>
#include <vector>

#include "store/ledger_journal.hpp"
#include "store_fixtures.hpp"

namespace ramguard::testing {
namespace {

// Marks as another process (`ramguard report`, a restarted daemon) sees them: committed only.
std::int64_t committed_marks(const std::filesystem::path& dir) {
  sqlite3* db = nullptr;
  const std::string file = (dir / Store::kFileName).string();
  EXPECT_EQ(sqlite3_open_v2(file.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM marks", -1, &stmt, nullptr), SQLITE_OK);
  std::int64_t count = -1;
  if (sqlite3_step(stmt) == SQLITE_ROW) count = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  return count;
}

struct BatchedStore {
  explicit BatchedStore(const std::filesystem::path& dir) : store(open_store(dir)) {
    store->set_batching(true);
    store->set_batch_opened_listener([this] { ++opened; });
    store->set_batch_lost_listener([this](const std::vector<std::string>& runs, const Error&) {
      lost_runs.insert(lost_runs.end(), runs.begin(), runs.end());
    });
    journal.emplace(*store);
  }
  // A phase begin as RunMachine::mark publishes it.
  Status mark(const RunLedger& ledger, std::uint64_t seq) {
    return journal->marked(ledger, testing::mark(seq, MarkKind::kPhaseBegin, "train", 1), nullptr,
                           nullptr);
  }
  std::unique_ptr<Store> store;
  std::optional<LedgerJournal> journal;
  int opened = 0;
  std::vector<std::string> lost_runs;
};

TEST(StoreBatch, MarksOfOneTurnAreOneTransactionDurableAtTheCommit) {
  TempDir dir;
  RunLedger a = sample_ledger("run-a");
  RunLedger b = sample_ledger("run-b");
  {
    auto plain = open_store(dir.path());
    ASSERT_TRUE(plain->begin_run(a).ok());
    ASSERT_TRUE(plain->begin_run(b).ok());
  }
  BatchedStore s(dir.path());
  for (std::uint64_t seq = 10; seq < 20; ++seq) {
    ASSERT_TRUE(s.mark(seq % 2 == 0 ? a : b, seq).ok());
  }
  EXPECT_TRUE(s.store->batch_open());
  EXPECT_EQ(s.opened, 1);  // one BEGIN for the ten marks
  EXPECT_EQ(committed_marks(dir.path()), 0);
  ASSERT_TRUE(s.store->commit_batch().ok());
  EXPECT_FALSE(s.store->batch_open());
  EXPECT_EQ(s.store->batches_committed(), 1u);
  EXPECT_EQ(committed_marks(dir.path()), 10);
  // The next turn opens a batch of its own.
  ASSERT_TRUE(s.mark(a, 20).ok());
  EXPECT_EQ(s.opened, 2);
  ASSERT_TRUE(s.store->commit_batch().ok());
  EXPECT_EQ(committed_marks(dir.path()), 11);
  EXPECT_TRUE(s.lost_runs.empty());
}

TEST(StoreBatch, AFailedCommitLosesTheWholeBatchAndNamesItsRuns) {
  TempDir dir;
  BatchedStore s(dir.path());
  RunLedger a = sample_ledger("run-a");
  ASSERT_TRUE(s.journal->run_started(a).ok());
  ASSERT_TRUE(s.store->commit_batch().ok());
  RunLedger b = sample_ledger("run-b");
  ASSERT_TRUE(s.journal->run_started(b).ok());
  ASSERT_TRUE(s.mark(a, 10).ok());
  ASSERT_TRUE(s.mark(b, 11).ok());
  s.store->fail_next_commit_for_testing();
  EXPECT_FALSE(s.store->commit_batch().ok());
  EXPECT_EQ(s.store->batches_lost(), 1u);
  EXPECT_EQ(s.lost_runs, (std::vector<std::string>{"run-b", "run-a"}));
  EXPECT_EQ(committed_marks(dir.path()), 0);
  auto gone = s.store->load_run("run-b");  // its start was in the lost batch too
  ASSERT_FALSE(gone.ok());
  EXPECT_TRUE(is_unknown_run(gone.error()));
  // The store goes on, and the lost writes were journalled again: once a probe of one write
  // is durable, the next write writes the rest first, in their order, then itself.
  EXPECT_EQ(s.journal->pending_writes(), 3u);
  EXPECT_FALSE(s.journal->flush_pending());  // after a failure: one write first, as a probe
  ASSERT_TRUE(s.store->commit_batch().ok());
  EXPECT_EQ(s.journal->pending_writes(), 2u);
  ASSERT_TRUE(s.mark(a, 12).ok());
  ASSERT_TRUE(s.store->commit_batch().ok());
  EXPECT_EQ(s.journal->pending_writes(), 0u);
  EXPECT_EQ(committed_marks(dir.path()), 3);
  EXPECT_TRUE(s.store->load_run("run-b").ok());
}

TEST(StoreBatch, WithoutBatchingEveryWriteCommitsAtOnce) {
  TempDir dir;
  auto store = open_store(dir.path());
  LedgerJournal journal(*store);
  RunLedger a = sample_ledger("run-a");
  ASSERT_TRUE(journal.run_started(a).ok());
  ASSERT_TRUE(
      journal.marked(a, mark(10, MarkKind::kPhaseBegin, "train", 1), nullptr, nullptr).ok());
  EXPECT_FALSE(store->batch_open());
  EXPECT_EQ(committed_marks(dir.path()), 1);
  EXPECT_TRUE(store->commit_batch().ok());  // nothing open: nothing to do
  EXPECT_EQ(store->batches_committed(), 0u);
}

TEST(StoreBatch, AnOpenBatchIsCommittedWhenTheStoreCloses) {
  TempDir dir;
  {
    BatchedStore s(dir.path());
    RunLedger a = sample_ledger("run-a");
    ASSERT_TRUE(s.journal->run_started(a).ok());
    ASSERT_TRUE(s.mark(a, 10).ok());
  }
  EXPECT_EQ(committed_marks(dir.path()), 1);
}

}  // namespace
}  // namespace ramguard::testing
