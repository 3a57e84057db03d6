// Teardown is not recovery (scenario K), on the fake clock: a settle window cut short by the
// run's end or the process's exit, or a floor the client's own gc probe lowered, does not clear
// a growth warning; only a whole settle window of a live run does. Also: the last round's floor
// is taken before the end and its verdict goes out in the end reply, and phases after the last
// declared round belong to that round, not to a round more.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "runs/run_machine.hpp"
#include "unit/runs/fakes.hpp"

namespace ramguard::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr std::uint64_t kModelBytes = 2'500'000'000;

class RunMachineTeardownTest : public ::testing::Test {
 protected:
  RunMachineTeardownTest() {
    params_.settle = seconds(3);
    params_.detectors.release_grace_seconds = 30;
    observers_.add(&observer_);
  }

  std::unique_ptr<RunMachine> start(std::uint32_t declared_rounds = 0) {
    RunInfo info;
    info.run_id = "r-teardown";
    info.job = "fedavg";
    info.target = {42, 1234};
    info.model_bytes = kModelBytes;
    info.declared_rounds = declared_rounds;
    auto run = RunMachine::start(info, /*end_on_exit=*/false, process_, params_, observers_);
    EXPECT_TRUE(run.ok());
    return std::move(*run);
  }

  MarkOutcome mark(RunMachine& run, MarkKind kind, const std::string& phase = "",
                   std::optional<GcFacts> gc = std::nullopt) {
    MarkInput in;
    in.run_id = run.run_id();
    in.kind = kind;
    in.phase = phase;
    in.gc = gc;
    auto out = run.mark(in, process_);
    EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
    return out.ok() ? *out : MarkOutcome{};
  }

  void tick(RunMachine& run, std::chrono::nanoseconds dt = seconds(1)) {
    clock_.advance(dt);
    run.reading(process_.periodic(), process_);
  }

  void advance_to_deadline(RunMachine& run) {
    const auto next = run.next_deadline();
    ASSERT_TRUE(next.has_value());
    clock_.advance(next->monotonic - clock_.now().monotonic);
    run.advance(clock_.now(), &process_);
  }

  // Rounds 1 and 2 with whole settle windows: 14.1 -> 17.3 GB, a growth warning for round 2
  // (scenario H's baseline build).
  std::unique_ptr<RunMachine> two_growing_rounds(std::uint32_t declared_rounds = 0) {
    auto run = start(declared_rounds);
    process_.set_rss(14'100'000'000);
    mark(*run, MarkKind::kRoundEnd);
    advance_to_deadline(*run);
    clock_.advance(seconds(60));
    process_.set_rss(17'300'000'000);
    mark(*run, MarkKind::kRoundEnd);
    advance_to_deadline(*run);
    EXPECT_EQ(warnings(), 1u);
    clock_.advance(seconds(60));
    return run;
  }

  std::size_t warnings() const {
    return static_cast<std::size_t>(std::count_if(
        observer_.verdicts.begin(), observer_.verdicts.end(),
        [](const Verdict& v) { return v.kind == verdict_kind::kGrowthWarning && !v.cleared; }));
  }
  std::size_t cleared() const {
    return static_cast<std::size_t>(std::count_if(observer_.verdicts.begin(),
                                                  observer_.verdicts.end(),
                                                  [](const Verdict& v) { return v.cleared; }));
  }

  FakeClock clock_;
  ScriptedProcess process_{clock_, 2 * kGB};
  RunParams params_;
  RecordingObserver observer_;
  ObserverSet observers_;
};

// The control: a whole settle window of a live run whose floor fell back clears the warning.
TEST_F(RunMachineTeardownTest, AWholeSettleWindowOfALiveRunClearsTheWarning) {
  auto run = two_growing_rounds();
  process_.set_rss(14'000'000'000);
  mark(*run, MarkKind::kRoundEnd);
  tick(*run);
  advance_to_deadline(*run);
  EXPECT_EQ(cleared(), 1u);
  EXPECT_TRUE(run->ledger().boundaries.back().window_complete);
}

// The coordinator ends the run 1 s after its last round end and frees everything: the floor is
// that of the readings before the end, and the warning stands.
TEST_F(RunMachineTeardownTest, ARunEndInsideTheLastSettleWindowTakesTheFloorBeforeIt) {
  auto run = two_growing_rounds();
  process_.set_rss(20'500'000'000);
  mark(*run, MarkKind::kRoundEnd);
  tick(*run, milliseconds(500));
  clock_.advance(milliseconds(500));
  const EndOutcome end = run->end(*run->take_reading(process_, false), clock_.now());
  process_.set_rss(2 * kGB);  // teardown after the end
  tick(*run);
  tick(*run);
  run->advance(clock_.now(), &process_);
  const BoundaryRecord& last = run->ledger().boundaries.back();
  EXPECT_TRUE(last.settled);
  EXPECT_FALSE(last.window_complete);
  EXPECT_EQ(last.floor_bytes, 20'500'000'000u);
  EXPECT_EQ(cleared(), 0u);
  // Settled at the end, the round's assessment is in the end reply (no change: no verdict, but
  // nothing "cleared" either), and nothing settles later.
  for (const Verdict& v : end.verdicts) EXPECT_FALSE(v.cleared) << v.summary;
  EXPECT_FALSE(run->next_deadline().has_value() &&
               run->next_deadline()->monotonic < run->ledger().ended->monotonic + seconds(29));
}

// Freed between the round end and the run end (inside the window): a low floor, but no clear.
TEST_F(RunMachineTeardownTest, MemoryFreedJustBeforeAnEarlyEndDoesNotClearTheWarning) {
  auto run = two_growing_rounds();
  mark(*run, MarkKind::kRoundEnd);
  process_.set_rss(2 * kGB);
  tick(*run);
  run->end(*run->take_reading(process_, false), clock_.now());
  run->sampling_stopped(clock_.now());
  EXPECT_EQ(run->ledger().boundaries.back().floor_bytes, 2 * kGB);
  EXPECT_FALSE(run->ledger().boundaries.back().window_complete);
  EXPECT_EQ(cleared(), 0u);
  EXPECT_EQ(warnings(), 1u);
}

// The process exits 1 s after its last round end, run not ended: the mark's reading is the floor
// (a dying process's last readings are its teardown), and the warning stands.
TEST_F(RunMachineTeardownTest, AnExitInsideTheLastSettleWindowDoesNotClearTheWarning) {
  auto run = two_growing_rounds();
  mark(*run, MarkKind::kRoundEnd);
  process_.set_rss(1 * kGB);
  tick(*run);
  ExitInfo info;
  info.status_known = true;
  info.detail = "exited with status 0";
  run->process_exited(info, clock_.now());
  run->sampling_stopped(clock_.now());
  EXPECT_EQ(run->ledger().boundaries.back().floor_bytes, 17'300'000'000u);
  EXPECT_FALSE(run->ledger().boundaries.back().window_complete);
  EXPECT_EQ(cleared(), 0u);
}

// The client's gc probe collected 3.2 GB of cycles just before the round end: the floor shows
// the drop, but the guard's own collection is not the program's recovery.
TEST_F(RunMachineTeardownTest, ADropTheGcProbeCausedDoesNotClearTheWarning) {
  auto run = two_growing_rounds();
  process_.set_rss(14'100'000'000);
  mark(*run, MarkKind::kRoundEnd, "",
       GcFacts{17'300'000'000, 14'100'000'000, /*collected_objects=*/12, 0.1});
  tick(*run);
  advance_to_deadline(*run);
  EXPECT_TRUE(run->ledger().boundaries.back().window_complete);
  EXPECT_EQ(run->ledger().boundaries.back().floor_bytes, 14'100'000'000u);
  EXPECT_EQ(cleared(), 0u);
  EXPECT_EQ(warnings(), 1u);
}

// The growth verdict of the last round ends in the end reply: the run's end settles its floor.
TEST_F(RunMachineTeardownTest, TheLastRoundsGrowthVerdictGoesOutInTheEndReply) {
  auto run = start();
  process_.set_rss(14'100'000'000);
  mark(*run, MarkKind::kRoundEnd);
  advance_to_deadline(*run);
  clock_.advance(seconds(60));
  process_.set_rss(17'300'000'000);
  mark(*run, MarkKind::kRoundEnd);
  tick(*run);
  const EndOutcome end = run->end(*run->take_reading(process_, false), clock_.now());
  const auto warning = std::find_if(end.verdicts.begin(), end.verdicts.end(), [](const Verdict& v) {
    return v.kind == verdict_kind::kGrowthWarning;
  });
  ASSERT_NE(warning, end.verdicts.end());
  EXPECT_EQ(warning->round, 2u);
}

// "Rounds: 4 of 3" must not happen: a save after the last declared round end is that round's.
TEST_F(RunMachineTeardownTest, PhasesAfterTheLastDeclaredRoundBelongToIt) {
  auto run = start(/*declared_rounds=*/3);
  for (int r = 0; r < 3; ++r) mark(*run, MarkKind::kRoundEnd);
  EXPECT_EQ(run->current_round(), 3u);
  const MarkOutcome save = mark(*run, MarkKind::kPhaseBegin, "save");
  EXPECT_EQ(save.mark.round, 3u);
  EXPECT_EQ(run->ledger().phases.back().round, 3u);
  // A fourth round end, undeclared, is still counted as round 4.
  EXPECT_EQ(mark(*run, MarkKind::kRoundEnd).mark.round, 4u);
  // Without declared rounds the next round is round N+1, as before.
  auto open = start();
  mark(*open, MarkKind::kRoundEnd);
  EXPECT_EQ(mark(*open, MarkKind::kPhaseBegin, "save").mark.round, 2u);
}

}  // namespace
}  // namespace ramguard::test
