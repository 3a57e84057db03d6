// Runaway and headroom judged against what the admitted plan expects a phase to hold.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "runs/run_machine.hpp"
#include "unit/runs/fakes.hpp"

namespace ramguard::test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using ::testing::HasSubstr;

// fedavg's aggregation: global 1 + host updates (2 hosts) + result 1 = 4 model copies.
MemoryPlan fedavg() {
  return {
      "fedavg",
      {{"load", {{"global", 1, false}, {"staging", 1, false}}},
       {"aggregation", {{"global", 1, false}, {"host_updates", 1, true}, {"result", 1, false}}}},
      0};
}

class RunMachinePlanTest : public ::testing::Test {
 protected:
  RunMachinePlanTest() {
    params_.plans["fedavg"] = fedavg();
    params_.detectors.budget_bytes = 16 * kGB;
    observers_.add(&observer_);
  }

  std::unique_ptr<RunMachine> start(bool with_plan = true) {
    RunInfo info;
    info.run_id = "r-plan";
    info.job = "vit-l";
    info.model_bytes = kGB;
    info.hosts = 2;
    if (with_plan) {
      info.plan = "fedavg";
      info.estimate_bytes = 4 * kGB;
    }
    auto run = RunMachine::start(info, false, process_, params_, observers_);
    EXPECT_TRUE(run.ok());
    return std::move(*run);
  }

  void mark(RunMachine& run, MarkKind kind, const std::string& phase = "") {
    MarkInput in;
    in.run_id = run.run_id();
    in.kind = kind;
    in.phase = phase;
    auto out = run.mark(in, process_);
    ASSERT_TRUE(out.ok()) << out.error().message;
  }

  // Grows RSS linearly to `to` over `seconds_total`, one sample every 2 s.
  void grow(RunMachine& run, std::uint64_t to, int seconds_total) {
    const std::uint64_t from = process_.periodic().rss_bytes;
    for (int t = 2; t <= seconds_total; t += 2) {
      process_.set_rss(from + (to - from) * static_cast<std::uint64_t>(t) /
                                  static_cast<std::uint64_t>(seconds_total));
      clock_.advance(seconds(2));
      run.reading(process_.periodic(), process_);
    }
  }

  std::vector<Verdict> of(const char* kind) const {
    std::vector<Verdict> out;
    for (const Verdict& v : observer_.verdicts) {
      if (v.kind == kind) out.push_back(v);
    }
    return out;
  }

  FakeClock clock_;
  ScriptedProcess process_{clock_, 2 * kGB};  // baseline: the plan counts on top of it
  RunParams params_;
  RecordingObserver observer_;
  ObserverSet observers_;
};

TEST_F(RunMachinePlanTest, PlannedGrowthAtAHighRateIsNoRunaway) {
  auto run = start();
  process_.set_rss(3 * kGB);  // the global state
  mark(*run, MarkKind::kPhaseBegin, "aggregation");
  // 2.9 GB in 10 s (0.29 GB/s, above the 200 MB/s rate rule), ending inside 2 + 4 GB.
  grow(*run, 5'900'000'000, 10);
  grow(*run, 5'950'000'000, 10);
  EXPECT_TRUE(of(verdict_kind::kRunaway).empty());
}

TEST_F(RunMachinePlanTest, GrowthPastThePlanIsRunawayWithinTwoSamples) {
  auto run = start();
  process_.set_rss(3 * kGB);
  mark(*run, MarkKind::kPhaseBegin, "aggregation");
  grow(*run, 5'800'000'000, 8);
  ASSERT_TRUE(of(verdict_kind::kRunaway).empty());
  process_.set_rss(6'200'000'000);  // first sample past 2 + 4 GB
  clock_.advance(seconds(2));
  run->reading(process_.periodic(), process_);
  EXPECT_TRUE(of(verdict_kind::kRunaway).empty());
  process_.set_rss(6'800'000'000);  // second: still climbing, at 0.3 GB/s
  clock_.advance(seconds(2));
  run->reading(process_.periodic(), process_);
  const auto runaway = of(verdict_kind::kRunaway);
  ASSERT_EQ(runaway.size(), 1u);
  EXPECT_EQ(runaway[0].phase, "aggregation");
  EXPECT_THAT(runaway[0].summary, HasSubstr("yardstick: the plan"));
  EXPECT_THAT(runaway[0].summary, HasSubstr("6.00 GB"));
  EXPECT_DOUBLE_EQ(runaway[0].figures.at("limit_bytes"), 6e9);
  EXPECT_NEAR(runaway[0].figures.at("copies_over"), 0.8, 1e-9);
}

TEST_F(RunMachinePlanTest, AboveThePlanButNoLongerClimbingIsNoRunaway) {
  auto run = start();
  mark(*run, MarkKind::kPhaseBegin, "aggregation");
  process_.set_rss(6'500'000'000);
  for (int i = 0; i < 5; ++i) {
    clock_.advance(seconds(2));
    run->reading(process_.periodic(), process_);
  }
  EXPECT_TRUE(of(verdict_kind::kRunaway).empty());
}

// Growth past the plan is said while the phase runs whatever its rate: here 0.1 GB/s, half the
// rate rule, to 1.5 GB past the planned 6 GB (tolerance: a quarter of the 4 GB planned).
TEST_F(RunMachinePlanTest, GrowthWellPastThePlanAtAnyRateIsSaidDuringThePhase) {
  auto run = start();
  process_.set_rss(3 * kGB);
  mark(*run, MarkKind::kPhaseBegin, "aggregation");
  grow(*run, 6'800'000'000, 38);  // 0.1 GB/s, past the plan but within the tolerance
  EXPECT_TRUE(of(verdict_kind::kRunaway).empty());
  grow(*run, 7'600'000'000, 8);
  const auto past = of(verdict_kind::kRunaway);
  ASSERT_EQ(past.size(), 1u);
  EXPECT_EQ(past[0].phase, "aggregation");
  EXPECT_THAT(past[0].summary, HasSubstr("Past the plan during aggregation"));
  EXPECT_THAT(past[0].summary, HasSubstr("more than 1.00 GB above it"));
  EXPECT_DOUBLE_EQ(past[0].figures.at("tolerance_bytes"), 1e9);
}

TEST_F(RunMachinePlanTest, TheSamePhasesPeakInEarlierRoundsRaisesTheYardstick) {
  auto run = start();
  mark(*run, MarkKind::kPhaseBegin, "aggregation");
  process_.spike(7 * kGB);  // round 1 peaked above the plan
  mark(*run, MarkKind::kPhaseEnd, "aggregation");
  mark(*run, MarkKind::kRoundEnd);
  clock_.advance(seconds(5));
  process_.set_rss(3 * kGB);
  mark(*run, MarkKind::kPhaseBegin, "aggregation");
  grow(*run, 6'900'000'000, 10);  // past the plan, within round 1's exact peak
  EXPECT_TRUE(of(verdict_kind::kRunaway).empty());
  grow(*run, 7'900'000'000, 4);  // 0.25 GB/s past 7 GB
  const auto runaway = of(verdict_kind::kRunaway);
  ASSERT_EQ(runaway.size(), 1u);
  EXPECT_THAT(runaway[0].summary, HasSubstr("yardstick: its peak in earlier rounds"));
  EXPECT_EQ(runaway[0].round, 2u);
}

TEST_F(RunMachinePlanTest, WithoutAPlanTheRateRuleStays) {
  auto run = start(/*with_plan=*/false);
  mark(*run, MarkKind::kPhaseBegin, "aggregation");
  grow(*run, 5'900'000'000, 14);  // 0.28 GB/s for 14 s
  const auto runaway = of(verdict_kind::kRunaway);
  ASSERT_EQ(runaway.size(), 1u);
  EXPECT_THAT(runaway[0].summary, HasSubstr("yardstick: rate"));
}

TEST_F(RunMachinePlanTest, APhasePlannedPastTheBudgetIsWarnedAtItsBeginMark) {
  params_.detectors.budget_bytes = 5 * kGB;  // baseline 2 + aggregation 4 = 6 GB > 5 GB
  auto run = start();
  mark(*run, MarkKind::kPhaseBegin, "load");  // 2 + 2 = 4 GB: 80%, under the 90% headroom
  EXPECT_TRUE(of(verdict_kind::kOverBudget).empty());
  EXPECT_TRUE(of(verdict_kind::kHeadroom).empty());
  mark(*run, MarkKind::kPhaseEnd, "load");
  mark(*run, MarkKind::kPhaseBegin, "aggregation");
  const auto over = of(verdict_kind::kOverBudget);
  ASSERT_EQ(over.size(), 1u);  // before any memory was allocated
  EXPECT_EQ(over[0].figures.at("forecast"), 1);
  EXPECT_THAT(over[0].summary, HasSubstr("Forecast at the begin of aggregation"));
  EXPECT_THAT(over[0].summary, HasSubstr("over the 5.00 GB budget by 1.00 GB"));
  mark(*run, MarkKind::kPhaseEnd, "aggregation");
  mark(*run, MarkKind::kRoundEnd);
  mark(*run, MarkKind::kPhaseBegin, "aggregation");
  EXPECT_EQ(of(verdict_kind::kOverBudget).size(), 1u);  // once per phase, not every round
}

TEST_F(RunMachinePlanTest, APhasePlannedIntoTheHeadroomGetsAHeadroomForecast) {
  params_.detectors.budget_bytes = 6'500'000'000;  // 6 GB is 92% of it
  auto run = start();
  mark(*run, MarkKind::kPhaseBegin, "aggregation");
  const auto headroom = of(verdict_kind::kHeadroom);
  ASSERT_EQ(headroom.size(), 1u);
  EXPECT_EQ(headroom[0].severity, Severity::kWarning);
  EXPECT_THAT(headroom[0].summary, HasSubstr("92% of the 6.50 GB budget"));
}

// The node's free memory shrinks under a running job (another process took it): the phase
// that still has to add 4 GB is warned at its begin when the node has 3 GB available, although
// the 16 GB budget has room; a later round with the node free again is not warned twice.
TEST_F(RunMachinePlanTest, APhaseThatNoLongerFitsTheNodesFreeMemoryIsForecastAtItsBegin) {
  auto run = start();
  MarkInput in;
  in.run_id = run->run_id();
  in.kind = MarkKind::kPhaseBegin;
  in.phase = "aggregation";
  in.room = PhaseRoom{20 * kGB, std::nullopt, {}};
  ASSERT_TRUE(run->mark(in, process_).ok());
  EXPECT_TRUE(of(verdict_kind::kOverBudget).empty());  // 4 GB to come, 20 GB available
  EXPECT_TRUE(of(verdict_kind::kHeadroom).empty());
  mark(*run, MarkKind::kPhaseEnd, "aggregation");
  mark(*run, MarkKind::kRoundEnd);

  in.room = PhaseRoom{3 * kGB, std::nullopt, {}};
  ASSERT_TRUE(run->mark(in, process_).ok());
  auto over = of(verdict_kind::kOverBudget);
  ASSERT_EQ(over.size(), 1u);
  EXPECT_EQ(over[0].severity, Severity::kCritical);
  EXPECT_EQ(over[0].round, 2u);
  EXPECT_EQ(over[0].figures.at("cap_node"), 1);
  EXPECT_EQ(over[0].figures.at("cap_bytes"), 3e9);
  EXPECT_EQ(over[0].figures.at("counted_bytes"), 2e9);
  EXPECT_THAT(over[0].summary, HasSubstr("it holds 2.00 GB now, so the phase adds 4.00 GB, more "
                                         "than the node's 3.00 GB available (MemAvailable) by "
                                         "1.00 GB"));
  mark(*run, MarkKind::kPhaseEnd, "aggregation");
  mark(*run, MarkKind::kRoundEnd);
  ASSERT_TRUE(run->mark(in, process_).ok());
  EXPECT_EQ(of(verdict_kind::kOverBudget).size(), 1u);  // said once per phase and cap
}

// A cgroup limit lowered below the phase's planned level (6 GB): critical, naming the cgroup;
// a limit the level comes within 90% of: a headroom warning. No room measured: budget only.
TEST_F(RunMachinePlanTest, APhasePlannedPastTheCgroupsLimitIsForecastNamingTheCgroup) {
  auto run = start();
  MarkInput in;
  in.run_id = run->run_id();
  in.kind = MarkKind::kPhaseBegin;
  in.phase = "load";  // 2 + 2 = 4 GB: 95% of a 4.2 GB limit
  in.room = PhaseRoom{std::nullopt, 4'200'000'000, "/sys/fs/cgroup/memory/job"};
  ASSERT_TRUE(run->mark(in, process_).ok());
  auto headroom = of(verdict_kind::kHeadroom);
  ASSERT_EQ(headroom.size(), 1u);
  EXPECT_EQ(headroom[0].figures.at("cap_cgroup"), 1);
  EXPECT_THAT(headroom[0].summary,
              HasSubstr("95% of the cgroup's limit 4.20 GB (/sys/fs/cgroup/memory/job)."));
  mark(*run, MarkKind::kPhaseEnd, "load");

  in.phase = "aggregation";
  in.room = PhaseRoom{std::nullopt, 5 * kGB, "/sys/fs/cgroup/memory/job"};
  ASSERT_TRUE(run->mark(in, process_).ok());
  auto over = of(verdict_kind::kOverBudget);
  ASSERT_EQ(over.size(), 1u);
  EXPECT_THAT(over[0].summary,
              HasSubstr("over the cgroup's limit 5.00 GB by 1.00 GB (/sys/fs/cgroup/memory/job), "
                        "where the kernel's OOM killer ends it."));
  EXPECT_EQ(over[0].figures.at("planned_bytes"), 6e9);
}

// `budget: auto`: a run whose cgroup limit (3 GB) is below the budget (16 GB) is judged against
// the limit, and its sentences say which budget that is; a limit above the budget changes nothing.
TEST_F(RunMachinePlanTest, ACgroupLimitBelowTheBudgetIsTheRunsBudget) {
  auto run = start(/*with_plan=*/false);
  run->set_cgroup_limit(20 * kGB);
  EXPECT_EQ(run->budget_bytes(), 16 * kGB);
  run->set_cgroup_limit(3 * kGB);
  EXPECT_EQ(run->budget_bytes(), 3 * kGB);
  grow(*run, 3'500'000'000, 20);
  const auto over = of(verdict_kind::kOverBudget);
  ASSERT_EQ(over.size(), 1u);
  EXPECT_EQ(over[0].figures.at("budget_bytes"), 3e9);
  EXPECT_THAT(over[0].summary, HasSubstr("exceeds the 3.00 GB budget (the run's cgroup limit): "));
}

TEST_F(RunMachinePlanTest, APhaseThePlanDoesNotListIsWarnedOnceWithTheNearestName) {
  auto run = start();
  MarkInput in;
  in.run_id = run->run_id();
  in.kind = MarkKind::kPhaseBegin;
  in.phase = "agregation";
  auto first = run->mark(in, process_);
  ASSERT_TRUE(first.ok()) << first.error().message;  // a warning, never a refusal
  EXPECT_THAT(first->warning, HasSubstr("phase 'agregation' is not in plan fedavg"));
  EXPECT_THAT(first->warning, HasSubstr("its phases: load, aggregation"));
  EXPECT_THAT(first->warning, HasSubstr("did you mean 'aggregation'?"));
  mark(*run, MarkKind::kPhaseEnd, "agregation");
  auto again = run->mark(in, process_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->warning, "");  // once per name and run

  in.phase = "checkpoint_upload";  // free-form and far from every planned name
  auto other = run->mark(in, process_);
  ASSERT_TRUE(other.ok());
  EXPECT_THAT(other->warning, HasSubstr("phase 'checkpoint_upload' is not in plan fedavg"));
  EXPECT_THAT(other->warning, ::testing::Not(HasSubstr("did you mean")));

  in.phase = "load";
  auto planned = run->mark(in, process_);
  ASSERT_TRUE(planned.ok());
  EXPECT_EQ(planned->warning, "");
}

TEST_F(RunMachinePlanTest, WithoutAPlanNoPhaseNameIsWarned) {
  auto run = start(/*with_plan=*/false);
  MarkInput in;
  in.run_id = run->run_id();
  in.kind = MarkKind::kPhaseBegin;
  in.phase = "trainig";
  auto out = run->mark(in, process_);
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->warning, "");
}

}  // namespace
}  // namespace ramguard::test
