// The ledger journal on a full disk (the store's size cap behaves like one): writes the store
// refuses wait in memory, later writes queue behind them, and all are written in their order
// once space is back; at its bound the journal keeps the newest and counts what it dropped.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "store/ledger_journal.hpp"
#include "store_fixtures.hpp"

namespace ramguard::testing {
namespace {

using ::testing::HasSubstr;

struct FullDisk {
  explicit FullDisk(std::size_t max_pending = kDefaultPendingWrites)
      : store(open_store(dir.path())), journal(*store, max_pending) {}

  Status big_mark(std::uint64_t seq) {
    return journal.marked(run, mark(seq, MarkKind::kPhaseBegin, std::string(2000, 'p'), 1), nullptr,
                          nullptr);
  }
  // Marks until the capped store refuses one; returns the seq of that first unstored mark.
  std::uint64_t fill() {
    EXPECT_TRUE(store->set_max_db_bytes(1).ok());
    for (std::uint64_t seq = 10; seq < 2000; ++seq) {
      if (!big_mark(seq).ok()) return seq;
    }
    ADD_FAILURE() << "the cap never refused a write";
    return 0;
  }
  std::vector<std::uint64_t> stored_seqs(const std::string& id) {
    std::vector<std::uint64_t> out;
    auto loaded = store->load_run(id);
    EXPECT_TRUE(loaded.ok());
    if (loaded) {
      for (const auto& m : loaded->marks) out.push_back(m.seq);
    }
    return out;
  }

  TempDir dir;
  std::unique_ptr<Store> store;
  LedgerJournal journal;
  RunLedger run = sample_ledger("a");
};

TEST(LedgerJournalFull, WritesAFullDiskRefusedAreWrittenInOrderWhenSpaceIsBack) {
  FullDisk d;
  ASSERT_TRUE(d.journal.run_started(d.run).ok());
  const std::uint64_t first = d.fill();
  ASSERT_GE(first, 10u);
  EXPECT_EQ(d.journal.pending_writes(), 1u);
  // A smaller write would fit, but it must not overtake the one waiting.
  const Status later =
      d.journal.marked(d.run, mark(first + 1, MarkKind::kPhaseEnd, "p", 1), nullptr, nullptr);
  ASSERT_FALSE(later.ok());
  EXPECT_THAT(later.error().message, HasSubstr("2 writes are journalled in memory"));
  RunLedger b = sample_ledger("b");
  EXPECT_FALSE(d.journal.run_started(b).ok());  // a run started while the disk is full
  EXPECT_TRUE(d.journal.behind());

  ASSERT_TRUE(d.store->set_max_db_bytes(0).ok());
  EXPECT_TRUE(d.journal.flush_pending());
  EXPECT_EQ(d.journal.pending_writes(), 0u);
  EXPECT_EQ(d.journal.dropped_writes(), 0u);
  const std::vector<std::uint64_t> seqs = d.stored_seqs("a");
  ASSERT_GE(seqs.size(), 2u);
  EXPECT_EQ(seqs[seqs.size() - 2], first);
  EXPECT_EQ(seqs.back(), first + 1);
  EXPECT_TRUE(d.store->load_run("b").ok());
}

TEST(LedgerJournalFull, AFullJournalKeepsTheNewestAndCountsWhatItDropped) {
  FullDisk d(/*max_pending=*/3);
  ASSERT_TRUE(d.journal.run_started(d.run).ok());
  const std::uint64_t first = d.fill();
  Status last = ok_status();
  for (std::uint64_t seq = first + 1; seq <= first + 5; ++seq) last = d.big_mark(seq);
  ASSERT_FALSE(last.ok());
  EXPECT_THAT(last.error().message, HasSubstr("the journal is full (3 writes): 3 older writes"));
  EXPECT_EQ(d.journal.pending_writes(), 3u);
  EXPECT_EQ(d.journal.dropped_writes(), 3u);

  ASSERT_TRUE(d.store->set_max_db_bytes(0).ok());
  EXPECT_TRUE(d.journal.flush_pending());
  const std::vector<std::uint64_t> seqs = d.stored_seqs("a");
  ASSERT_GE(seqs.size(), 3u);
  // The three newest are there; the three before them (first .. first + 2) are not.
  EXPECT_EQ(std::vector<std::uint64_t>(seqs.end() - 3, seqs.end()),
            (std::vector<std::uint64_t>{first + 3, first + 4, first + 5}));
  for (std::uint64_t dropped = first; dropped < first + 3; ++dropped) {
    EXPECT_EQ(std::find(seqs.begin(), seqs.end(), dropped), seqs.end()) << dropped;
  }
}

}  // namespace
}  // namespace ramguard::testing
