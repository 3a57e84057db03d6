// The store as a RunObserver and RunSource: what runs publish lands in SQLite, reservation
// rows follow the admission state (also rows restored after a restart), and a stored run id
// is never silently replaced.
#include "store/ledger_journal.hpp"

#include <gtest/gtest.h>

#include "store_fixtures.hpp"

namespace ramguard::testing {
namespace {

TEST(LedgerJournal, ReservationsFollowTheAdmissionStateIncludingRestoredOnes) {
  TempDir dir;
  {
    auto store = Store::open(dir.path(), test_vfs());
    ASSERT_TRUE(store.ok());
    LedgerJournal journal(**store);
    ASSERT_TRUE(journal
                    .reservations({{"res-a", "j", 1000, {}, "", 0, 1, 2},
                                   {"res-b", "j", 2000, {}, "r-1", 0, 1, 2}},
                                  3000)
                    .ok());
  }
  // After a restart the rows come back; once admission no longer holds them they are deleted.
  auto store = Store::open(dir.path(), test_vfs());
  ASSERT_TRUE(store.ok());
  LedgerJournal journal(**store);
  auto restored = journal.load_reservations();
  ASSERT_TRUE(restored.ok());
  ASSERT_EQ(restored->size(), 2u);
  ASSERT_TRUE(journal.reservations({{"res-b", "j", 2000, {}, "r-1", 0, 1, 2}}, 2000).ok());
  auto after = journal.load_reservations();
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0].id, "res-b");
  ASSERT_TRUE(journal.reservations({}, 0).ok());
  EXPECT_TRUE(journal.load_reservations()->empty());
}

TEST(LedgerJournal, ReservationOwnersAndClaimsSurviveARestart) {
  TempDir dir;
  {
    auto store = Store::open(dir.path(), test_vfs());
    ASSERT_TRUE(store.ok());
    LedgerJournal journal(**store);
    ASSERT_TRUE(journal.reservations({{"res-a", "j", 1000, {}, "", 1234, 1, 2}}, 1000).ok());
    // A claim changes one row: it is written, the unchanged rows are not rewritten.
    ASSERT_TRUE(journal
                    .reservations({{"res-a", "j", 1000, {}, "r-7", 1234, 1, 2},
                                   {"res-b", "k", 2000, {}, "", 4321, 3, 4}},
                                  3000)
                    .ok());
  }
  auto store = Store::open(dir.path(), test_vfs());
  ASSERT_TRUE(store.ok());
  LedgerJournal journal(**store);
  auto restored = journal.load_reservations();
  ASSERT_TRUE(restored.ok());
  ASSERT_EQ(restored->size(), 2u);
  for (const Reservation& r : *restored) {
    if (r.id == "res-a") {
      EXPECT_EQ(r.owner_uid, 1234u) << "the admitted UID owns its reservation after a restart";
      EXPECT_EQ(r.run_id, "r-7");
    } else {
      EXPECT_EQ(r.owner_uid, 4321u);
      EXPECT_EQ(r.bytes, 2000u);
    }
  }
}

TEST(LedgerJournal, ARunIdAlreadyStoredIsRefusedNotReplaced) {
  TempDir dir;
  auto store = Store::open(dir.path(), test_vfs());
  ASSERT_TRUE(store.ok());
  LedgerJournal journal(**store);
  RunLedger first = sample_ledger("r-same", "first");
  ASSERT_TRUE(journal.run_started(first).ok());
  RunLedger second = sample_ledger("r-same", "second");
  EXPECT_FALSE(journal.run_started(second).ok());
  auto loaded = (*store)->load_run("r-same");
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->info.job, "first");
}

TEST(LedgerJournal, AFinishedRunIsStoredWithItsEndMarkAndClosedPhases) {
  TempDir dir;
  auto store = Store::open(dir.path(), test_vfs());
  ASSERT_TRUE(store.ok());
  LedgerJournal journal(**store);
  RunLedger l = sample_ledger("r-end");
  l.marks = {mark(1, MarkKind::kRunStart, "", 0)};
  l.phases.clear();
  l.boundaries.clear();
  l.verdicts.clear();
  ASSERT_TRUE(journal.run_started(l).ok());
  PhaseRecord open;
  open.phase = "save";
  open.round = 1;
  open.begin = at_seconds(5);
  l.phases.push_back(open);
  MarkRecord begin = mark(2, MarkKind::kPhaseBegin, "save", 1);
  l.marks.push_back(begin);
  ASSERT_TRUE(journal.marked(l, begin, &l.phases.back(), nullptr).ok());
  l.phases.back().end = at_seconds(9);
  l.marks.push_back(mark(3, MarkKind::kRunEnd, "", 1));
  l.state = RunState::kEnded;
  l.ended = at_seconds(9);
  ASSERT_TRUE(journal.run_finished(l, {&l.phases.back()}).ok());
  auto loaded = (*store)->load_run("r-end");
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->state, RunState::kEnded);
  ASSERT_EQ(loaded->marks.size(), 3u);
  EXPECT_EQ(loaded->marks.back().kind, MarkKind::kRunEnd);
  ASSERT_EQ(loaded->phases.size(), 1u);
  EXPECT_TRUE(loaded->phases[0].end.has_value());
  auto active = journal.load_active_runs();
  ASSERT_TRUE(active.ok());
  EXPECT_TRUE(active->empty());
}

}  // namespace
}  // namespace ramguard::testing
