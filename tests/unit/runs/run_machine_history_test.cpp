// A long run's footprint is bounded whatever its marks: ended phases past the held count are
// folded into totals by name (open ones stay), verdicts past theirs are dropped keeping the
// worst, and a run's distinct phase names are capped.
#include <gtest/gtest.h>

#include "runs/run_machine.hpp"
#include "unit/runs/fakes.hpp"

namespace ramguard::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class RunHistoryTest : public ::testing::Test {
 protected:
  RunHistoryTest() {
    params_.held_marks = 256;
    params_.held_phases = 32;
    params_.held_verdicts = 32;
    params_.max_phase_names = 4;
    // Every aggregation end to synchronization begin over 1 s is a phase-gap verdict.
    params_.detectors.phase_gaps = {
        {"aggregation", MarkEdge::kEnd, "synchronization", MarkEdge::kBegin, 1}};
    observers_.add(&observer_);
  }

  std::unique_ptr<RunMachine> start() {
    RunInfo info;
    info.run_id = "r-long";
    info.job = "fedavg";
    info.target = {42, 1234};
    auto run = RunMachine::start(info, /*end_on_exit=*/false, process_, params_, observers_);
    EXPECT_TRUE(run.ok());
    return std::move(*run);
  }

  Result<MarkOutcome> mark(RunMachine& run, MarkKind kind, const std::string& phase) {
    MarkInput in;
    in.run_id = run.run_id();
    in.kind = kind;
    in.phase = phase;
    return run.mark(in, process_);
  }

  // One phase of `name` lasting `length`, peaking at `peak_bytes`.
  void phase(RunMachine& run, const std::string& name, std::chrono::nanoseconds length,
             std::uint64_t peak_bytes = 2 * kGB) {
    ASSERT_TRUE(mark(run, MarkKind::kPhaseBegin, name).ok());
    process_.spike(peak_bytes);
    clock_.advance(length);
    ASSERT_TRUE(mark(run, MarkKind::kPhaseEnd, name).ok());
  }

  FakeClock clock_;
  ScriptedProcess process_{clock_, 2 * kGB};
  RunParams params_;
  RecordingObserver observer_;
  ObserverSet observers_;
};

TEST_F(RunHistoryTest, EndedPhasesPastTheHeldCountBecomeTotalsByNameAndOpenOnesStay) {
  auto run = start();
  // An outer phase open for the whole run, then 1,000 short phases of two names.
  ASSERT_TRUE(mark(*run, MarkKind::kPhaseBegin, "training").ok());
  for (int i = 0; i < 500; ++i) {
    phase(*run, "aggregation", milliseconds(100), 3 * kGB + static_cast<std::uint64_t>(i));
    phase(*run, "synchronization", milliseconds(200));
  }
  const RunLedger& l = run->ledger();
  // Held: at most 1.25x the count + 1, whatever the number of phases.
  EXPECT_LE(l.phases.size(), 32u + 8u + 1u);
  EXPECT_EQ(l.phase_count(), 1001u);
  EXPECT_EQ(l.earlier_phases + l.phases.size(), 1001u);
  // The open outer phase is still held, still open, still the run's outermost.
  ASSERT_EQ(run->open_phases().size(), 1u);
  EXPECT_EQ(l.phases[run->open_phases()[0]].phase, "training");
  EXPECT_FALSE(l.phases[run->open_phases()[0]].end.has_value());
  // Totals by name account for every phase no longer held.
  ASSERT_EQ(l.earlier_phase_totals.size(), 2u);
  const PhaseTotals& agg = l.earlier_phase_totals.at("aggregation");
  const PhaseTotals& sync = l.earlier_phase_totals.at("synchronization");
  EXPECT_EQ(agg.count + sync.count, l.earlier_phases);
  EXPECT_NEAR(agg.total_seconds, 0.1 * static_cast<double>(agg.count), 1e-6);
  EXPECT_NEAR(sync.total_seconds, 0.2 * static_cast<double>(sync.count), 1e-6);
  EXPECT_EQ(agg.max_peak_bytes, 3 * kGB + agg.count - 1);  // the last dropped one peaked highest

  // The outer phase still ends with the run's peak folded in.
  ASSERT_TRUE(mark(*run, MarkKind::kPhaseEnd, "training").ok());
  EXPECT_TRUE(run->open_phases().empty());
}

TEST_F(RunHistoryTest, VerdictsPastTheHeldCountAreDroppedKeepingTheWorstAndReplyingEachOnce) {
  auto run = start();
  std::size_t replied = 0;
  for (int i = 0; i < 300; ++i) {
    phase(*run, "aggregation", milliseconds(10));
    clock_.advance(seconds(2));  // over the 1 s gap: one phase_gap verdict per round
    auto begin = mark(*run, MarkKind::kPhaseBegin, "synchronization");
    ASSERT_TRUE(begin.ok());
    replied += begin->verdicts.size();
    ASSERT_TRUE(mark(*run, MarkKind::kPhaseEnd, "synchronization").ok());
  }
  const RunLedger& l = run->ledger();
  EXPECT_EQ(replied, 300u) << "every gap verdict went out in a reply, once";
  EXPECT_LE(l.verdicts.size(), 32u + 8u + 1u);
  EXPECT_EQ(l.earlier_verdicts + l.verdicts.size(), 300u);
  ASSERT_TRUE(l.worst_earlier_verdict.has_value());
  EXPECT_EQ(l.worst_earlier_verdict->kind, verdict_kind::kPhaseGap);
  EXPECT_EQ(observer_.verdicts.size(), 300u) << "every verdict reached the store";
}

TEST_F(RunHistoryTest, ANewPhaseNamePastTheLimitIsRefusedWithTheReasonAndOldNamesGoOn) {
  auto run = start();
  for (const char* name : {"load", "train", "aggregation", "save"}) {
    phase(*run, name, milliseconds(10));
  }
  auto refused = mark(*run, MarkKind::kPhaseBegin, "step-17");
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().kind, ErrorKind::kResourceExhausted);
  EXPECT_NE(refused.error().message.find("already uses 4 phase names, the limit"),
            std::string::npos)
      << refused.error().message;
  EXPECT_NE(refused.error().message.find("'step-17'"), std::string::npos);
  phase(*run, "train", milliseconds(10));  // a name already used goes on
  EXPECT_EQ(run->ledger().phase_count(), 5u);
}

}  // namespace
}  // namespace ramguard::test
