// The registry against a real child process: real sampler, real exit watcher; its deadlines
// (settle windows, release checks) are manual alarms on a FakeClock, fired when the test moves
// the clock, so none waits on real time.
#include "runs/run_registry.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "unit/procfs/test_child.hpp"
#include "unit/runs/fakes.hpp"
#include "unit/runs/manual_alarms.hpp"
#include "unit/runs/run_until.hpp"

namespace ramguard::test {
namespace {

using namespace std::chrono_literals;
using ramguard::testing::TestChild;
using ::testing::HasSubstr;

class RunRegistryTest : public ::testing::Test {
 protected:
  RunRegistryTest() {
    params_.settle = 50ms;
    params_.detectors.release_grace_seconds = 0.3;
    registry_.set_params(params_);
    registry_.add_observer(&observer_);
    sampler_.start();
    EXPECT_TRUE(child_.hold(0));
  }

  StartRunInput input() {
    StartRunInput in;
    in.pid = child_.pid();
    in.job = "registry-test";
    return in;
  }

  MarkInput mark(const std::string& run_id, MarkKind kind, std::string phase = "") {
    MarkInput in;
    in.run_id = run_id;
    in.kind = kind;
    in.phase = std::move(phase);
    return in;
  }

  // Moves the clock by D and fires the alarms it made due.
  int advance(std::chrono::nanoseconds d) {
    clock_.advance(d);
    return alarms_.fire_due();
  }

  TestChild child_;
  asio::io_context io_;
  FakeClock clock_;
  ManualAlarms alarms_{clock_};
  ProcFs procfs_;
  Sampler sampler_{io_, procfs_, clock_, 20ms};
  ExitWatcher exits_{io_};
  Admission admission_{16 * kGB, 0, 60s, clock_};
  RunParams params_;
  RunRegistry registry_{io_, clock_, sampler_, exits_, admission_, params_, &alarms_};
  RecordingObserver observer_;
  Caller root_{0, 0, true};
};

TEST_F(RunRegistryTest, AWholeRunFromStartToRelease) {
  params_.detectors.release_slack_bytes = 16 * TestChild::kMiB;
  registry_.set_params(params_);
  auto started = registry_.start(input(), root_);
  ASSERT_TRUE(started.ok()) << started.error().message;
  const std::string id = (*started)->info.run_id;
  EXPECT_EQ(registry_.active_runs(), 1u);
  ASSERT_TRUE(registry_.mark(mark(id, MarkKind::kPhaseBegin, "aggregation"), root_).ok());
  ASSERT_TRUE(child_.spike(64 * TestChild::kMiB));
  auto ended = registry_.mark(mark(id, MarkKind::kPhaseEnd, "aggregation"), root_);
  ASSERT_TRUE(ended.ok());
  EXPECT_GE(ended->phase_peak_bytes, 64 * TestChild::kMiB);  // the spike, through VmHWM
  ASSERT_TRUE(registry_.mark(mark(id, MarkKind::kRoundEnd), root_).ok());
  // The round end's settle window is an alarm at the mark plus `settle`: not a moment before.
  ASSERT_EQ(alarms_.next_at(), clock_.now().monotonic + params_.settle);
  EXPECT_EQ(advance(params_.settle - 1ms), 0);
  EXPECT_TRUE(observer_.settled_floors.empty());
  EXPECT_EQ(advance(1ms), 1);
  EXPECT_EQ(observer_.settled_floors.size(), 1u);
  EXPECT_EQ(alarms_.armed(), 0u);  // an active run with nothing settling waits for nothing
  // The run ends holding 64 MiB, past the release slack: its release is pending, read again on
  // its alarm 50 ms after the end, then at 100 ms.
  EXPECT_EQ(advance(10ms), 0);
  ASSERT_TRUE(child_.hold(64 * TestChild::kMiB));
  auto end = registry_.end(id, root_);
  ASSERT_TRUE(end.ok());
  EXPECT_TRUE(end->stored);
  EXPECT_EQ(registry_.active_runs(), 0u);
  EXPECT_FALSE(registry_.find(id)->release_decided());
  ASSERT_EQ(alarms_.next_at(), clock_.now().monotonic + 50ms);
  EXPECT_EQ(advance(50ms), 1);
  EXPECT_FALSE(registry_.find(id)->release_decided());  // still held
  // Memory back at the baseline: the next read sees it, the release passes, sampling stops
  // and no deadline is left.
  ASSERT_TRUE(child_.hold(0));
  EXPECT_EQ(advance(49ms), 0);
  EXPECT_FALSE(registry_.find(id)->release_decided());
  EXPECT_EQ(advance(1ms), 1);
  ASSERT_TRUE(registry_.find(id)->release_decided());
  EXPECT_EQ(observer_.verdicts.back().kind, verdict_kind::kRelease);
  EXPECT_TRUE(observer_.verdicts.back().passed);
  EXPECT_EQ(sampler_.size(), 0u);
  EXPECT_EQ(alarms_.armed(), 0u);
}

// A round that ends before the previous one settled takes that floor at once: the one alarm
// moves to the new window instead of a second one going off late.
TEST_F(RunRegistryTest, ARoundEndBeforeTheLastSettledMovesItsAlarm) {
  auto started = registry_.start(input(), root_);
  ASSERT_TRUE(started.ok()) << started.error().message;
  const std::string id = (*started)->info.run_id;
  ASSERT_TRUE(registry_.mark(mark(id, MarkKind::kRoundEnd), root_).ok());
  EXPECT_EQ(advance(params_.settle / 2), 0);
  ASSERT_TRUE(registry_.mark(mark(id, MarkKind::kRoundEnd), root_).ok());
  EXPECT_EQ(observer_.settled_floors.size(), 1u);  // the first, cut short by the second
  EXPECT_EQ(alarms_.armed(), 1u);
  EXPECT_EQ(alarms_.next_at(), clock_.now().monotonic + params_.settle);
  EXPECT_EQ(advance(params_.settle / 2), 0);  // where the first window would have closed
  EXPECT_EQ(advance(params_.settle / 2), 1);
  EXPECT_EQ(observer_.settled_floors.size(), 2u);
}

TEST_F(RunRegistryTest, OnlyTheOwnerOrRootMayChangeARun) {
  auto started = registry_.start(input(), root_);
  ASSERT_TRUE(started.ok());
  const std::string id = (*started)->info.run_id;
  const Caller stranger{1, 4242, false};
  auto marked = registry_.mark(mark(id, MarkKind::kRoundEnd), stranger);
  ASSERT_FALSE(marked.ok());
  EXPECT_EQ(marked.error().kind, ErrorKind::kPermissionDenied);
  EXPECT_THAT(marked.error().message, HasSubstr("uid 4242 may not mark run " + id));
  auto ended = registry_.end(id, stranger);
  ASSERT_FALSE(ended.ok());
  auto start = registry_.start(input(), stranger);
  ASSERT_FALSE(start.ok());
  EXPECT_THAT(start.error().message, HasSubstr("uid 4242 may not start a run on PID"));
  EXPECT_EQ(sampler_.size(), 1u);  // the refused start left nothing behind
}

TEST_F(RunRegistryTest, UnknownRunsAndDoubleStartsAreRefused) {
  auto unknown = registry_.mark(mark("r-nope", MarkKind::kRoundEnd), root_);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().kind, ErrorKind::kNotFound);
  ASSERT_TRUE(registry_.start(input(), root_).ok());
  auto twice = registry_.start(input(), root_);
  ASSERT_FALSE(twice.ok());
  EXPECT_THAT(twice.error().message, HasSubstr("already has active run"));
}

TEST_F(RunRegistryTest, AReservationIsClaimedByItsRunAndReleasedAtItsEnd) {
  const Decision d = admission_.admit({"registry-test", 4 * kGB, EstimateSource{}, 0});
  ASSERT_TRUE(d.admitted);
  StartRunInput in = input();
  in.reservation_id = d.reservation_id;
  auto started = registry_.start(in, root_);
  ASSERT_TRUE(started.ok()) << started.error().message;
  EXPECT_EQ((*started)->info.estimate_bytes, 4 * kGB);
  EXPECT_EQ(admission_.reserved_bytes(), 4 * kGB);
  ASSERT_TRUE(registry_.end((*started)->info.run_id, root_).ok());
  EXPECT_EQ(admission_.reserved_bytes(), 0u);
}

TEST_F(RunRegistryTest, AFailedStartLeavesTheReservationUnclaimed) {
  const Decision d = admission_.admit({"registry-test", 4 * kGB, EstimateSource{}, 0});
  ASSERT_TRUE(d.admitted);
  StartRunInput in = input();
  in.reservation_id = d.reservation_id;
  in.pid = 999999999;  // no such process
  ASSERT_FALSE(registry_.start(in, root_).ok());
  ASSERT_EQ(admission_.reservations().size(), 1u);
  EXPECT_TRUE(admission_.reservations()[0].run_id.empty());
  in.reservation_id = "res-unknown";
  in.pid = child_.pid();
  auto unknown = registry_.start(in, root_);
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.error().message, HasSubstr("res-unknown"));
  EXPECT_EQ(registry_.active_runs(), 0u);
}

TEST_F(RunRegistryTest, ADeadProcessEndsItsRunExitedAndFreesItsReservation) {
  const Decision d = admission_.admit({"registry-test", 2 * kGB, EstimateSource{}, 0});
  StartRunInput in = input();
  in.reservation_id = d.reservation_id;
  auto started = registry_.start(in, root_);
  ASSERT_TRUE(started.ok());
  const std::string id = (*started)->info.run_id;
  ASSERT_TRUE(registry_.mark(mark(id, MarkKind::kPhaseBegin, "aggregation"), root_).ok());
  ::kill(child_.pid(), SIGKILL);
  ASSERT_TRUE(run_until(
      io_, [&] { return !registry_.find(id)->active(); }, 2000ms));
  EXPECT_EQ(registry_.find(id)->ledger().state, RunState::kExited);
  EXPECT_EQ(observer_.verdicts.back().kind, verdict_kind::kExited);
  EXPECT_THAT(observer_.verdicts.back().summary, HasSubstr("aggregation"));
  EXPECT_EQ(admission_.reserved_bytes(), 0u);
  EXPECT_FALSE(observer_.last_readable);
  EXPECT_EQ(sampler_.size(), 0u);
}

// A source that hands back one live and one dead run, as a ledger would after a restart.
class FakeSource final : public RunSource {
 public:
  Result<std::vector<RunLedger>> load_active_runs() override { return runs; }
  Result<std::vector<Reservation>> load_reservations() override { return rows; }
  std::vector<RunLedger> runs;
  std::vector<Reservation> rows;
};

TEST_F(RunRegistryTest, RecoveryResumesLiveRunsEndsDeadOnesLostAndRestoresReservations) {
  auto started = registry_.start(input(), root_);
  ASSERT_TRUE(started.ok());
  RunLedger live = **started;
  RunLedger dead = live;
  dead.info.run_id = "r-dead";
  dead.info.target.start_time_ticks += 1;  // same PID, another process: not ours
  FakeSource source;
  source.runs = {live, dead};
  const auto now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now().wall).count();
  source.rows = {{"res-live", "j", kGB, {}, live.info.run_id, 0, now_ms, now_ms + 60000},
                 {"res-dead", "j", kGB, {}, "r-dead", 0, now_ms, now_ms + 60000},
                 {"res-free", "j", kGB, {}, "", 0, now_ms, now_ms + 60000},
                 {"res-old", "j", kGB, {}, "", 0, now_ms - 120000, now_ms - 60000}};

  RecordingObserver observer;
  Admission fresh(16 * kGB, 0, 60s, clock_);
  RunRegistry recovering(io_, clock_, sampler_, exits_, fresh, params_);
  recovering.add_observer(&observer);
  recovering.recover(source);
  EXPECT_EQ(recovering.active_runs(), 1u);
  EXPECT_TRUE(recovering.find(live.info.run_id)->active());
  EXPECT_EQ(recovering.find("r-dead")->ledger().state, RunState::kLost);
  EXPECT_EQ(fresh.reserved_bytes(), 2 * kGB);  // the live run's and the unexpired free one
}

}  // namespace
}  // namespace ramguard::test
