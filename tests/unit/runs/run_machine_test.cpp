// The run state machine on a fake clock: whole runs, settle windows and release grace run in
// microseconds, with readings scripted through a fake process.
#include "runs/run_machine.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "unit/runs/fakes.hpp"

namespace ramguard::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

class RunMachineTest : public ::testing::Test {
 protected:
  RunMachineTest() {
    params_.settle = seconds(3);
    params_.detectors.release_grace_seconds = 30;
    params_.detectors.release_slack_bytes = 1 * kGB;
    observers_.add(&observer_);
  }

  std::unique_ptr<RunMachine> start(std::uint64_t model_bytes = 0) {
    RunInfo info;
    info.run_id = "r-test";
    info.job = "fedavg";
    info.target = {42, 1234};
    info.model_bytes = model_bytes;
    auto run = RunMachine::start(info, /*end_on_exit=*/false, process_, params_, observers_);
    EXPECT_TRUE(run.ok());
    return std::move(*run);
  }

  MarkOutcome mark(RunMachine& run, MarkKind kind, const std::string& phase = "",
                   std::uint32_t round = 0) {
    MarkInput in;
    in.run_id = run.run_id();
    in.kind = kind;
    in.phase = phase;
    in.round = round;
    auto out = run.mark(in, process_);
    EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().message);
    return out.ok() ? *out : MarkOutcome{};
  }

  // A periodic tick: the clock moves, the sampler reads statm.
  void tick(RunMachine& run, std::chrono::nanoseconds dt = seconds(1)) {
    clock_.advance(dt);
    run.reading(process_.periodic(), process_);
  }

  // Runs every deadline as the registry's timer would, with readings in between.
  void advance_to_deadline(RunMachine& run) {
    const auto next = run.next_deadline();
    ASSERT_TRUE(next.has_value());
    clock_.advance(next->monotonic - clock_.now().monotonic);
    run.advance(clock_.now(), &process_);
  }

  static std::size_t count(const std::vector<Verdict>& vs, const char* kind) {
    return static_cast<std::size_t>(
        std::count_if(vs.begin(), vs.end(), [&](const Verdict& v) { return v.kind == kind; }));
  }

  FakeClock clock_;
  ScriptedProcess process_{clock_, 2 * kGB};
  RunParams params_;
  RecordingObserver observer_;
  ObserverSet observers_;
};

TEST_F(RunMachineTest, StartTakesACompleteBaselineResetsTheHighWaterMarkAndRecordsIt) {
  auto run = start();
  EXPECT_TRUE(run->active());
  EXPECT_TRUE(run->exact_peaks());
  EXPECT_EQ(process_.resets, 1);
  EXPECT_EQ(run->ledger().baseline.rss_bytes, 2 * kGB);
  ASSERT_EQ(run->ledger().marks.size(), 1u);
  EXPECT_EQ(run->ledger().marks[0].kind, MarkKind::kRunStart);
  EXPECT_EQ(observer_.events, std::vector<std::string>{"run_started"});
  EXPECT_FALSE(run->next_deadline().has_value());
}

TEST_F(RunMachineTest, StartFailsWithoutABaselineReading) {
  process_.fail_reads(true);
  RunInfo info;
  info.run_id = "r-x";
  auto run = RunMachine::start(info, false, process_, params_, observers_);
  ASSERT_FALSE(run.ok());
  EXPECT_THAT(run.error().message, HasSubstr("exited"));
  EXPECT_TRUE(observer_.events.empty());
}

TEST_F(RunMachineTest, NestedPhasesGetTheExactPeakOfASpikeBetweenReadings) {
  auto run = start();
  mark(*run, MarkKind::kPhaseBegin, "aggregation");
  tick(*run);
  mark(*run, MarkKind::kPhaseBegin, "inner");
  process_.spike(9 * kGB);  // 300 ms between samples: only VmHWM saw it
  process_.set_rss(3 * kGB);
  const MarkOutcome inner = mark(*run, MarkKind::kPhaseEnd, "inner");
  EXPECT_EQ(inner.phase_peak_bytes, 9 * kGB);
  EXPECT_TRUE(inner.peak_exact);
  process_.set_rss(4 * kGB);
  const MarkOutcome outer = mark(*run, MarkKind::kPhaseEnd, "aggregation");
  EXPECT_EQ(outer.phase_peak_bytes, 9 * kGB);  // the spike happened while it was open too
  EXPECT_EQ(run->ledger().peak_bytes, 9 * kGB);
  EXPECT_TRUE(run->open_phases().empty());
}

TEST_F(RunMachineTest, PeaksAreMarkedInexactWhenTheResetIsDenied) {
  process_.deny_reset(true);
  auto run = start();
  EXPECT_FALSE(run->exact_peaks());
  mark(*run, MarkKind::kPhaseBegin, "load");
  const MarkOutcome end = mark(*run, MarkKind::kPhaseEnd, "load");
  EXPECT_FALSE(end.peak_exact);
  EXPECT_EQ(observer_.last_reason, "hwm_reset_denied");
}

TEST_F(RunMachineTest, MarksAreValidated) {
  auto run = start();
  MarkInput in;
  in.run_id = run->run_id();
  in.kind = MarkKind::kPhaseEnd;
  in.phase = "save";
  auto ended = run->mark(in, process_);
  ASSERT_FALSE(ended.ok());
  EXPECT_THAT(ended.error().message, HasSubstr("ended without a begin (open phases: none)"));
  in.kind = MarkKind::kPhaseBegin;
  in.phase = "Bad Name";
  auto bad = run->mark(in, process_);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.error().message, HasSubstr("is invalid"));
  in.phase = "save";
  ASSERT_TRUE(run->mark(in, process_).ok());
  auto twice = run->mark(in, process_);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().kind, ErrorKind::kFailedPrecondition);
}

TEST_F(RunMachineTest, RoundsStrictlyIncreaseAndNeverWrap) {
  auto run = start();
  EXPECT_EQ(mark(*run, MarkKind::kRoundEnd, "", 5).mark.round, 5u);
  MarkInput in;
  in.run_id = run->run_id();
  in.kind = MarkKind::kRoundEnd;
  for (std::uint32_t round : {5u, 3u}) {
    in.round = round;
    auto back = run->mark(in, process_);
    ASSERT_FALSE(back.ok());
    EXPECT_THAT(back.error().message, HasSubstr("round " + std::to_string(round)));
    EXPECT_THAT(back.error().message, HasSubstr("last ended round: 5"));
  }
  const std::uint32_t last = std::numeric_limits<std::uint32_t>::max();
  EXPECT_EQ(mark(*run, MarkKind::kRoundEnd, "", last).mark.round, last);
  in.round = 0;  // counted: would wrap to 0
  auto wrapped = run->mark(in, process_);
  ASSERT_FALSE(wrapped.ok());
  EXPECT_THAT(wrapped.error().message, HasSubstr("last round number"));
  EXPECT_EQ(run->rounds_ended(), last);
}

TEST_F(RunMachineTest, TheFloorIsTheLowestReadingInTheSettleWindow) {
  auto run = start();
  tick(*run);
  process_.set_rss(5 * kGB);
  clock_.advance(std::chrono::milliseconds(500));
  mark(*run, MarkKind::kRoundEnd);
  const auto deadline = run->next_deadline();
  ASSERT_TRUE(deadline.has_value());
  EXPECT_EQ(deadline->monotonic - clock_.now().monotonic, seconds(3));
  process_.set_rss(3 * kGB);  // a deferred cleanup just after the mark
  tick(*run);
  process_.set_rss(4 * kGB);
  tick(*run);
  EXPECT_TRUE(observer_.settled_floors.empty());  // not yet: the window is open
  advance_to_deadline(*run);
  ASSERT_EQ(observer_.settled_floors.size(), 1u);
  EXPECT_EQ(observer_.settled_floors[0], 3 * kGB);
  EXPECT_TRUE(run->ledger().boundaries[0].settled);
  EXPECT_FALSE(run->next_deadline().has_value());
}

TEST_F(RunMachineTest, ARoundEndingBeforeThePreviousSettledSettlesItAtOnce) {
  auto run = start();
  mark(*run, MarkKind::kRoundEnd);
  clock_.advance(std::chrono::milliseconds(100));
  mark(*run, MarkKind::kRoundEnd);
  ASSERT_EQ(run->ledger().boundaries.size(), 2u);
  EXPECT_TRUE(run->ledger().boundaries[0].settled);
  EXPECT_FALSE(run->ledger().boundaries[1].settled);
}

TEST_F(RunMachineTest, GrowthBetweenRoundsWarnsAfterTheSecondRound) {
  auto run = start(/*model_bytes=*/2'500'000'000);
  process_.set_rss(14'100'000'000);
  mark(*run, MarkKind::kRoundEnd);
  advance_to_deadline(*run);
  EXPECT_EQ(count(observer_.verdicts, verdict_kind::kGrowthWarning), 0u);
  clock_.advance(seconds(60));
  process_.set_rss(17'300'000'000);
  mark(*run, MarkKind::kRoundEnd);
  advance_to_deadline(*run);
  ASSERT_EQ(count(observer_.verdicts, verdict_kind::kGrowthWarning), 1u);
  const auto warning = std::find_if(observer_.verdicts.begin(), observer_.verdicts.end(),
                                    [](const Verdict& v) { return v.kind == "growth_warning"; });
  EXPECT_EQ(warning->round, 2u);
  EXPECT_THAT(warning->summary, HasSubstr("model copies"));
}

TEST_F(RunMachineTest, AGrowthVerdictDecidedBetweenMarksReachesTheNextMarkReplyOnce) {
  auto run = start(/*model_bytes=*/2'500'000'000);
  process_.set_rss(14'100'000'000);
  mark(*run, MarkKind::kRoundEnd);
  advance_to_deadline(*run);
  clock_.advance(seconds(60));
  process_.set_rss(17'300'000'000);
  // The round end's own reply comes before its floor settles: no growth verdict yet.
  EXPECT_EQ(count(mark(*run, MarkKind::kRoundEnd).verdicts, verdict_kind::kGrowthWarning), 0u);
  advance_to_deadline(*run);
  ASSERT_EQ(count(observer_.verdicts, verdict_kind::kGrowthWarning), 1u);
  // Decided at the settle deadline, it goes out with the next reply, and only that one.
  EXPECT_EQ(count(mark(*run, MarkKind::kPhaseBegin, "load").verdicts, verdict_kind::kGrowthWarning),
            1u);
  EXPECT_EQ(count(mark(*run, MarkKind::kPhaseEnd, "load").verdicts, verdict_kind::kGrowthWarning),
            0u);
}

// Thresholds in model copies apply through the run's model size; a run without one keeps the
// configured bytes. Here the bytes (20 GB) never warn on the floor's +15.3 GB, half a copy does.
TEST_F(RunMachineTest, AGrowthStepInModelCopiesAppliesThroughTheRunsModelSize) {
  params_.detectors.growth_min_bytes = 20 * kGB;
  params_.detectors.plateau_band_bytes = plateau_band_for(20 * kGB);
  params_.detectors.growth_min_model_copies = 0.5;  // 1.25 GB for a 2.5 GB model
  params_.detectors.budget_bytes = 100 * kGB;       // no projection towards the budget
  for (const std::uint64_t model_bytes : {std::uint64_t{2'500'000'000}, std::uint64_t{0}}) {
    SCOPED_TRACE("model_bytes " + std::to_string(model_bytes));
    observer_.verdicts.clear();
    process_.set_rss(2 * kGB);
    auto run = start(model_bytes);
    process_.set_rss(14'100'000'000);
    mark(*run, MarkKind::kRoundEnd);
    advance_to_deadline(*run);
    clock_.advance(seconds(60));
    process_.set_rss(17'300'000'000);
    mark(*run, MarkKind::kRoundEnd);
    advance_to_deadline(*run);
    std::string summaries;
    for (const Verdict& v : observer_.verdicts) summaries += v.summary + "\n";
    EXPECT_EQ(count(observer_.verdicts, verdict_kind::kGrowthWarning), model_bytes ? 1u : 0u)
        << summaries;
  }
}

TEST_F(RunMachineTest, AReleaseSlackInModelCopiesAppliesThroughTheRunsModelSize) {
  params_.detectors.release_slack_model_copies = 2;  // 2 GB for a 1 GB model; bytes say 1 GB
  for (const std::uint64_t model_bytes : {kGB, std::uint64_t{0}}) {
    SCOPED_TRACE("model_bytes " + std::to_string(model_bytes));
    observer_.verdicts.clear();
    process_.set_rss(2 * kGB);
    auto run = start(model_bytes);
    process_.set_rss(8 * kGB);
    tick(*run);
    run->end(*run->take_reading(process_, false), clock_.now());
    process_.set_rss(3'500'000'000);  // baseline 2 GB + 1.5 GB
    tick(*run, seconds(5));
    while (run->wants_sampling()) advance_to_deadline(*run);  // undecided: fails at the grace
    ASSERT_EQ(count(observer_.verdicts, verdict_kind::kRelease), 1u);
    EXPECT_EQ(observer_.verdicts.back().passed, model_bytes != 0)
        << observer_.verdicts.back().summary;
  }
}

TEST_F(RunMachineTest, ReleasePassesWhenMemoryReturnsWithinTheGrace) {
  auto run = start();
  process_.set_rss(8 * kGB);
  tick(*run);
  run->end(*run->take_reading(process_, false), clock_.now());
  EXPECT_TRUE(run->wants_sampling());  // release undecided
  tick(*run, seconds(5));
  process_.set_rss(2'500'000'000);  // baseline 2 GB + 1 GB slack
  tick(*run, seconds(5));
  EXPECT_FALSE(run->wants_sampling());
  ASSERT_EQ(count(observer_.verdicts, verdict_kind::kRelease), 1u);
  EXPECT_TRUE(observer_.verdicts.back().passed);
}

TEST_F(RunMachineTest, ReleaseFailsAtTheEndOfTheGraceWithWhatIsStillHeld) {
  auto run = start(/*model_bytes=*/kGB);
  process_.set_rss(8 * kGB);
  tick(*run);
  auto end = run->end(*run->take_reading(process_, false), clock_.now());
  EXPECT_TRUE(end.stored);
  EXPECT_EQ(observer_.finished_state, RunState::kEnded);
  // Quick readings right after the end (50 ms, doubling to 1.6 s), then the grace.
  const auto deadline = run->next_deadline();
  ASSERT_TRUE(deadline.has_value());
  EXPECT_EQ(deadline->monotonic - run->ledger().ended->monotonic, milliseconds(50));
  clock_.advance(seconds(29));
  run->advance(clock_.now(), &process_);
  EXPECT_EQ(count(observer_.verdicts, verdict_kind::kRelease), 0u);
  ASSERT_TRUE(run->next_deadline().has_value());
  EXPECT_EQ(run->next_deadline()->monotonic - run->ledger().ended->monotonic, seconds(30));
  advance_to_deadline(*run);
  ASSERT_EQ(count(observer_.verdicts, verdict_kind::kRelease), 1u);
  const Verdict& release = observer_.verdicts.back();
  EXPECT_FALSE(release.passed);
  EXPECT_THAT(release.summary, HasSubstr("model copies"));
  EXPECT_FALSE(run->wants_sampling());
}

TEST_F(RunMachineTest, EndingMidPhaseClosesItAndStopsTheSettleWindowCleanly) {
  auto run = start();
  mark(*run, MarkKind::kPhaseBegin, "save");
  mark(*run, MarkKind::kRoundEnd);
  run->end(*run->take_reading(process_, false), clock_.now());
  EXPECT_EQ(observer_.closed_phases, 1u);
  EXPECT_TRUE(run->ledger().phases[0].end.has_value());
  run->sampling_stopped(clock_.now());
  EXPECT_TRUE(run->ledger().boundaries[0].settled);
  EXPECT_EQ(observer_.retired, 1);
}

TEST_F(RunMachineTest, ProcessDeathEndsTheRunExitedWithTheLastPhaseAndSignal) {
  auto run = start();
  mark(*run, MarkKind::kPhaseBegin, "aggregation");
  ExitInfo info;
  info.status_known = true;
  info.signal = 9;
  info.detail = "killed by signal 9";
  run->process_exited(info, clock_.now());
  EXPECT_EQ(run->ledger().state, RunState::kExited);
  EXPECT_FALSE(run->wants_sampling());
  ASSERT_EQ(count(observer_.verdicts, verdict_kind::kExited), 1u);
  EXPECT_THAT(observer_.verdicts.back().summary, HasSubstr("aggregation"));
  EXPECT_FALSE(observer_.last_readable);
  EXPECT_EQ(observer_.last_reason, "exited");
}

TEST_F(RunMachineTest, AFailedDurableWriteIsReportedAndTheRunGoesOn) {
  auto run = start();
  observer_.refuse_writes(true);
  const MarkOutcome out = mark(*run, MarkKind::kPhaseBegin, "load");
  EXPECT_FALSE(out.stored);
  EXPECT_FALSE(run->store_ok());
  ASSERT_FALSE(observer_.failures.empty());
  EXPECT_EQ(observer_.failures[0], "mark");
  EXPECT_TRUE(run->active());
}

TEST_F(RunMachineTest, WithoutADurableObserverNothingIsStored) {
  RecordingObserver metrics_only(/*durable=*/false);
  ObserverSet observers;
  observers.add(&metrics_only);
  RunInfo info;
  info.run_id = "r-mem";
  auto run = RunMachine::start(info, false, process_, params_, observers);
  ASSERT_TRUE(run.ok());
  MarkInput in;
  in.run_id = "r-mem";
  in.kind = MarkKind::kRoundEnd;
  auto out = (*run)->mark(in, process_);
  ASSERT_TRUE(out.ok());
  EXPECT_FALSE(out->stored);
}

TEST_F(RunMachineTest, ResumeRestoresOpenPhasesRoundsAndSettlesPendingFloors) {
  auto run = start();
  mark(*run, MarkKind::kRoundEnd);
  mark(*run, MarkKind::kRoundEnd);
  mark(*run, MarkKind::kPhaseBegin, "aggregation");
  RunLedger stored = run->ledger();
  ASSERT_FALSE(stored.boundaries.back().settled);
  auto resumed = RunMachine::resume(stored, params_, observers_);
  EXPECT_TRUE(resumed->active());
  EXPECT_EQ(resumed->rounds_ended(), 2u);
  ASSERT_EQ(resumed->open_phases().size(), 1u);
  EXPECT_EQ(resumed->ledger().phases[resumed->open_phases()[0]].phase, "aggregation");
  EXPECT_TRUE(std::all_of(resumed->ledger().boundaries.begin(), resumed->ledger().boundaries.end(),
                          [](const BoundaryRecord& b) { return b.settled; }));
  EXPECT_FALSE(resumed->next_deadline().has_value());
  // The resumed run carries on where it stopped.
  EXPECT_EQ(mark(*resumed, MarkKind::kRoundEnd).mark.round, 3u);
  mark(*resumed, MarkKind::kPhaseEnd, "aggregation");
}

TEST_F(RunMachineTest, LostRunsEndLostAndNeedNoSampling) {
  auto run = start();
  run->lost(clock_.now());
  EXPECT_EQ(run->ledger().state, RunState::kLost);
  EXPECT_FALSE(run->wants_sampling());
  EXPECT_EQ(count(observer_.verdicts, verdict_kind::kLost), 1u);
}

// A phase end sent again after an outage carries the time the client left the phase: the phase
// lasts until then, not until the daemon heard it.
TEST_F(RunMachineTest, APhaseEndWithTheClientsTimeLastsUntilThatTime) {
  auto run = start();
  mark(*run, MarkKind::kPhaseBegin, "aggregation");
  const Instant left = clock_.now();
  clock_.advance(std::chrono::milliseconds(25));
  const auto left_wall = clock_.now().wall;
  clock_.advance(seconds(15));  // the daemon was stopped
  MarkInput in;
  in.run_id = run->run_id();
  in.kind = MarkKind::kPhaseEnd;
  in.phase = "aggregation";
  in.client_wall = left_wall;
  auto out = run->mark(in, process_);
  ASSERT_TRUE(out.ok()) << out.error().message;
  EXPECT_NEAR(out->phase_duration_seconds, 0.025, 1e-9);
  ASSERT_TRUE(run->ledger().phases.back().end.has_value());
  EXPECT_EQ(run->ledger().phases.back().end->wall, left_wall);
  EXPECT_EQ(run->ledger().phases.back().begin.wall, left.wall);
}

}  // namespace
}  // namespace ramguard::test
