// Every record type survives a write and a read back, across a close and reopen.
#include <gtest/gtest.h>

#include "store/store.hpp"
#include "store_fixtures.hpp"

namespace ramguard {
namespace {

using testing::expect_same;
using testing::full_ledger;
using testing::open_store;
using testing::TempDir;

TEST(StoreRoundTrip, FullLedgerThroughBeginRun) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  const RunLedger ledger = full_ledger("run-1");
  auto begun = store->begin_run(ledger);
  ASSERT_TRUE(begun.ok()) << begun.error().message;
  auto loaded = store->load_run("run-1");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  expect_same(ledger, *loaded);
  EXPECT_EQ(store->path(), dir.path() / "ramguard.db");
}

TEST(StoreRoundTrip, RecordsWrittenOneByOne) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  const RunLedger full = full_ledger("run-2");
  RunLedger head = full;
  head.marks.clear();
  head.phases.clear();
  head.boundaries.clear();
  head.verdicts.clear();
  ASSERT_TRUE(store->begin_run(head).ok());
  for (const auto& m : full.marks) ASSERT_TRUE(store->append_mark("run-2", m).ok());
  for (const auto& p : full.phases) ASSERT_TRUE(store->save_phase("run-2", p).ok());
  for (const auto& b : full.boundaries) ASSERT_TRUE(store->save_boundary("run-2", b).ok());
  for (const auto& v : full.verdicts) ASSERT_TRUE(store->save_verdict("run-2", v).ok());
  auto loaded = store->load_run("run-2");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  expect_same(full, *loaded);
}

TEST(StoreRoundTrip, PhaseUpsertCompletesTheOpenPhase) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store && store->begin_run(testing::sample_ledger("r")).ok());
  PhaseRecord p{"load", 0, testing::at_seconds(1), std::nullopt, 1'000, false};
  ASSERT_TRUE(store->save_phase("r", p).ok());
  PhaseRecord later{"save", 0, testing::at_seconds(9), std::nullopt, 5, false};
  ASSERT_TRUE(store->save_phase("r", later).ok());
  p.end = testing::at_seconds(3);
  p.peak_bytes = 5'000'000'000;
  p.peak_exact = true;
  ASSERT_TRUE(store->save_phase("r", p).ok());
  auto loaded = store->load_run("r");
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->phases.size(), 2u);  // updated in place, still first
  EXPECT_EQ(loaded->phases[0].phase, "load");
  ASSERT_TRUE(loaded->phases[0].end.has_value());
  testing::expect_same(*loaded->phases[0].end, *p.end, "end");
  EXPECT_EQ(loaded->phases[0].peak_bytes, 5'000'000'000u);
  EXPECT_TRUE(loaded->phases[0].peak_exact);
  EXPECT_EQ(loaded->phases[1].phase, "save");
}

TEST(StoreRoundTrip, BoundaryFloorUpdatedWhenSettled) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store && store->begin_run(testing::sample_ledger("r")).ok());
  BoundaryRecord round2;
  round2.round = 2;
  round2.reading = testing::reading(7'000'000'000, 20);
  round2.floor_bytes = 7'000'000'000;
  BoundaryRecord round1 = round2;
  round1.round = 1;
  ASSERT_TRUE(store->save_boundary("r", round2).ok());
  ASSERT_TRUE(store->save_boundary("r", round1).ok());
  round2.floor_bytes = 6'500'000'000;
  round2.settled = true;
  ASSERT_TRUE(store->save_boundary("r", round2).ok());
  auto loaded = store->load_run("r");
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->boundaries.size(), 2u);
  EXPECT_EQ(loaded->boundaries[0].round, 1u);  // ordered by round
  EXPECT_EQ(loaded->boundaries[1].floor_bytes, 6'500'000'000u);
  EXPECT_TRUE(loaded->boundaries[1].settled);
  EXPECT_FALSE(loaded->boundaries[0].settled);
}

TEST(StoreRoundTrip, VerdictUpsertClearsAndReplacesFigures) {
  TempDir dir;
  auto store = open_store(dir.path());
  const RunLedger full = full_ledger("r");
  ASSERT_TRUE(store && store->begin_run(full).ok());
  Verdict v = full.verdicts[0];
  v.cleared = true;
  v.summary = "growth stopped: plateau at 3.30 GB";
  v.figures = {{"plateau_bytes", 3.3e9}};
  ASSERT_TRUE(store->save_verdict("r", v).ok());
  Verdict other = v;
  other.kind = verdict_kind::kPlateau;
  ASSERT_TRUE(store->save_verdict("r", other).ok());
  auto loaded = store->load_run("r");
  ASSERT_TRUE(loaded.ok());
  ASSERT_EQ(loaded->verdicts.size(), 2u);
  expect_same(v, loaded->verdicts[0], "updated warning");
  expect_same(other, loaded->verdicts[1], "plateau");
}

TEST(StoreRoundTrip, EndRunAndProgress) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store && store->begin_run(testing::sample_ledger("r")).ok());
  const MemoryReading mid = testing::reading(12'000'000'000, 30, 4);
  ASSERT_TRUE(store->update_progress("r", 13'000'000'000, false, mid).ok());
  auto active = store->load_run("r");
  ASSERT_TRUE(active.ok());
  EXPECT_EQ(active->peak_bytes, 13'000'000'000u);
  EXPECT_FALSE(active->peak_exact);
  expect_same(mid, active->last, "progress");

  const MemoryReading last = testing::reading(700'000'000, 90, 5);
  const Instant ended = testing::at_seconds(95, 1);
  ASSERT_TRUE(store->end_run("r", RunState::kExited, ended, 14'000'000'000, last, true).ok());
  auto loaded = store->load_run("r");
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->state, RunState::kExited);
  ASSERT_TRUE(loaded->ended.has_value());
  expect_same(ended, *loaded->ended, "ended");
  EXPECT_EQ(loaded->peak_bytes, 14'000'000'000u);
  EXPECT_TRUE(loaded->peak_exact);
  expect_same(last, loaded->last, "last");
  auto actives = store->load_active_runs();
  ASSERT_TRUE(actives.ok());
  EXPECT_TRUE(actives->empty());
}

TEST(StoreRoundTrip, RestartReturnsActiveLedgersWithMarksInOrder) {
  TempDir dir;
  RunLedger active = full_ledger("active-run");
  {
    auto store = open_store(dir.path());
    ASSERT_TRUE(store);
    RunLedger finished = full_ledger("finished-run");
    finished.started = testing::at_seconds(-100);
    ASSERT_TRUE(store->begin_run(finished).ok());
    ASSERT_TRUE(
        store->end_run("finished-run", RunState::kEnded, testing::at_seconds(-50), 1, {}).ok());
    ASSERT_TRUE(store->begin_run(active).ok());
    // Appended out of order on purpose: the ledger comes back ordered by seq.
    for (std::uint64_t seq : {7, 5, 6}) {
      MarkRecord m = testing::mark(seq, MarkKind::kPhaseBegin, "phase" + std::to_string(seq), 2);
      ASSERT_TRUE(store->append_mark("active-run", m).ok());
    }
    for (std::uint64_t seq : {5, 6, 7}) {
      active.marks.push_back(
          testing::mark(seq, MarkKind::kPhaseBegin, "phase" + std::to_string(seq), 2));
    }
  }  // closed, as on a daemon restart
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  auto actives = store->load_active_runs();
  ASSERT_TRUE(actives.ok()) << actives.error().message;
  ASSERT_EQ(actives->size(), 1u);
  expect_same(active, actives->front());
  for (std::size_t i = 1; i < actives->front().marks.size(); ++i) {
    EXPECT_LT(actives->front().marks[i - 1].seq, actives->front().marks[i].seq);
  }
}

TEST(StoreRoundTrip, SamplesOrderedByTimeAndReplacedPerBucket) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store && store->begin_run(testing::sample_ledger("r")).ok());
  std::vector<ProgressSample> first = {{2000, 20, 19, 21, 15, 5}, {1000, 10, 9, 11, 8, 2}};
  std::vector<ProgressSample> second = {{3000, 30, 29, 31, 25, 5}, {2000, 22, 18, 23, 16, 6}};
  ASSERT_TRUE(store->append_samples("r", first).ok());
  ASSERT_TRUE(store->append_samples("r", second).ok());
  auto loaded = store->load_samples("r");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const std::vector<ProgressSample> expected = {first[1], second[1], second[0]};
  EXPECT_EQ(*loaded, expected);
}

TEST(StoreRoundTrip, ReservationsSurviveReopen) {
  TempDir dir;
  // The estimate's source, typed, comes back too: a run claiming it after a restart has its plan.
  const Reservation a{
      "res-a", "vit", 11'100'000'000,    {EstimateKind::kCalibrated, "fedavg", "run-9"},
      "",      1000,  1'700'000'000'000, 1'700'000'060'000};
  Reservation b{"res-b", "bert", 2'000'000'000,     {EstimateKind::kPlan, "fedavg", ""},
                "",      0,      1'700'000'001'000, 1'700'000'061'000};
  {
    auto store = open_store(dir.path());
    ASSERT_TRUE(store);
    ASSERT_TRUE(store->save_reservation(a).ok());
    ASSERT_TRUE(store->save_reservation(b).ok());
    b.run_id = "run-b";  // claimed by its run
    ASSERT_TRUE(store->save_reservation(b).ok());
    ASSERT_TRUE(store->save_reservation({"res-c", "x", 1, {}, "", 0, 1, 2}).ok());
    ASSERT_TRUE(store->delete_reservation("res-c").ok());
    ASSERT_TRUE(store->delete_reservation("never-existed").ok());
  }
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  auto loaded = store->load_reservations();
  ASSERT_TRUE(loaded.ok());
  const std::vector<Reservation> expected = {a, b};
  EXPECT_EQ(*loaded, expected);
}

TEST(StoreRoundTrip, AtomicallyIsAllOrNothing) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store && store->begin_run(testing::sample_ledger("r")).ok());
  auto failed = store->atomically([&]() -> Status {
    if (auto s = store->append_mark("r", testing::mark(1, MarkKind::kRoundEnd, "", 1)); !s)
      return s;
    return store->append_mark("r", testing::mark(1, MarkKind::kRoundEnd, "", 1));  // duplicate
  });
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.error().message.find("mark 1 of run 'r' is already in"), std::string::npos)
      << failed.error().message;
  auto after_failure = store->load_run("r");
  ASSERT_TRUE(after_failure.ok());
  EXPECT_TRUE(after_failure->marks.empty());

  BoundaryRecord b;
  b.round = 1;
  auto done = store->atomically([&]() -> Status {
    if (auto s = store->append_mark("r", testing::mark(1, MarkKind::kRoundEnd, "", 1)); !s)
      return s;
    return store->save_boundary("r", b);
  });
  ASSERT_TRUE(done.ok()) << done.error().message;
  auto loaded = store->load_run("r");
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->marks.size(), 1u);
  EXPECT_EQ(loaded->boundaries.size(), 1u);
}

TEST(StoreRoundTrip, PruneRemovesOldFinishedRunsWithTheirRecords) {
  TempDir dir;
  auto store = open_store(dir.path());
  ASSERT_TRUE(store);
  ASSERT_TRUE(store->begin_run(full_ledger("old")).ok());
  ASSERT_TRUE(store->append_samples("old", std::vector<ProgressSample>{{1, 2, 3, 4, 5, 6}}).ok());
  ASSERT_TRUE(store->end_run("old", RunState::kEnded, testing::at_seconds(10), 1, {}).ok());
  ASSERT_TRUE(store->begin_run(full_ledger("recent")).ok());
  ASSERT_TRUE(store->end_run("recent", RunState::kLost, testing::at_seconds(100), 1, {}).ok());
  ASSERT_TRUE(store->begin_run(full_ledger("active")).ok());

  auto removed = store->prune_runs(testing::at_seconds(50).wall);
  ASSERT_TRUE(removed.ok()) << removed.error().message;
  EXPECT_EQ(*removed, 1u);
  EXPECT_TRUE(is_unknown_run(store->load_run("old").error()));
  EXPECT_TRUE(is_unknown_run(store->load_samples("old").error()));
  auto remaining = store->list_runs(0);
  ASSERT_TRUE(remaining.ok());
  ASSERT_EQ(remaining->size(), 2u);
  // A later prune never takes the active run.
  auto later = store->prune_runs(testing::at_seconds(1'000'000).wall);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(*later, 1u);
  auto active = store->load_run("active");
  ASSERT_TRUE(active.ok());
  expect_same(full_ledger("active"), *active);
  // The old run's marks went with it: re-creating the id starts clean.
  ASSERT_TRUE(store->begin_run(testing::sample_ledger("old")).ok());
  EXPECT_TRUE(store->load_run("old")->marks.empty());
}

}  // namespace
}  // namespace ramguard
