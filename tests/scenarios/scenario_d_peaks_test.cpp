// Scenario D (README.md): high peaks over a flat floor. 4 hosts x 1 GiB model, peak ~6 GiB
// each round, floor 2.5 GiB, budget 16 GiB, scaled down 64x. No leak; exact per-phase peaks,
// also for spikes shorter than the sampling interval; a headroom warning only when a peak
// passes 90% of the budget.
#include <gtest/gtest.h>

#include "scenario_support.hpp"

namespace ramguard::testing {
namespace {

constexpr ScenarioScale gib{64};
// The kernel's per-process RSS counters are batched (a few hundred KiB of slack either way).
constexpr std::uint64_t kCounterSlack = 512 * 1024;

ScaledThresholds thresholds() {
  return gib.thresholds(16);
}

// Rounds whose aggregation spikes to `peak` and whose synchronization spikes to floor + one
// model, each spike 30 ms (the sampler reads every 100 ms). Returns the final status.
v1::RunStatus run_peaks(Daemon& daemon, double peak, int rounds) {
  MemChild child;
  Shaper shaper(child);
  shaper.level(gib(2.5));
  auto start = ScenarioRun::with("scenario-d", gib(1));
  start.hosts = 4;
  ScenarioRun run(daemon, child.pid(), start);
  for (int r = 0; r < rounds; ++r) {
    const std::uint64_t agg_spike = gib(peak) - gib(2.5);
    // Peaks are of the memory that counts: from the counted part of the begin mark (the
    // child's file-backed pages, its code and libraries, are page cache and not in them).
    const std::uint64_t agg_from = counted(run.begin("aggregation").reading());
    child.command("spike " + std::to_string(agg_spike) + " 30");
    const v1::MarkReply agg = run.end("aggregation");
    const std::uint64_t sync_from = counted(run.begin("synchronization").reading());
    child.command("spike " + std::to_string(gib(1)) + " 30");
    const v1::MarkReply sync = run.end("synchronization");
    run.round_end();
    run.wait_settled(run.rounds_ended());
    // The exact peak holds what was allocated inside the phase, and only that: the
    // high-water mark was reset at the phase's begin.
    EXPECT_TRUE(agg.peak_exact());
    EXPECT_GE(agg.phase_peak_bytes() + kCounterSlack, agg_from + agg_spike);
    EXPECT_LT(agg.phase_peak_bytes(), agg_from + agg_spike + (2u << 20));
    EXPECT_TRUE(sync.peak_exact());
    EXPECT_GE(sync.phase_peak_bytes() + kCounterSlack, sync_from + gib(1));
    EXPECT_LT(sync.phase_peak_bytes(), sync_from + gib(1) + (2u << 20));
  }
  return run.status();
}

TEST(ScenarioD, HighPeaksOverAFlatFloorAreNoLeakAndPeaksAreExact) {
  auto daemon = start_scenario_daemon(thresholds());
  const v1::RunStatus s = run_peaks(*daemon, 6.0, 5);
  SCOPED_TRACE(verdict_text(s) + floors_text(s));
  EXPECT_TRUE(verdicts_of(s, "leak").empty());
  EXPECT_TRUE(verdicts_of(s, "growth_warning").empty());
  EXPECT_TRUE(verdicts_of(s, "headroom").empty());  // 6 of 16 GiB: 37.5%
  EXPECT_TRUE(verdicts_of(s, "over_budget").empty());
  // Every phase of the status carries its exact peak; the run's peak is the aggregation one.
  ASSERT_EQ(s.phases_size(), 10);
  // The levels are RSS levels; peaks leave out the child's file-backed pages (page cache).
  const std::uint64_t file = s.baseline().file_bytes();
  for (const auto& p : s.phases()) {
    EXPECT_TRUE(p.peak_exact()) << p.phase() << " round " << p.round();
    // At least the floor plus the spike (the child's own RSS may exceed the 2.5 GiB level).
    EXPECT_GE(p.peak_bytes() + file + (1u << 20), p.phase() == "aggregation" ? gib(6) : gib(3.5));
  }
  EXPECT_GE(s.peak_bytes() + file + (1u << 20), gib(6));
  for (const auto& b : s.boundaries()) {
    EXPECT_NEAR(static_cast<double>(b.floor_bytes()), static_cast<double>(gib(2.5)), 1 << 20);
  }
}

TEST(ScenarioD, APeakPastNinetyPercentOfTheBudgetWarnsOnHeadroom) {
  auto daemon = start_scenario_daemon(thresholds());
  MemChild child;
  Shaper shaper(child);
  shaper.level(gib(2.5));
  ScenarioRun run(*daemon, child.pid(), ScenarioRun::with("scenario-d-high", gib(1)));
  run.begin("aggregation");
  child.command("spike " + std::to_string(gib(15) - gib(2.5)) + " 30");  // 93.75% of 16 GiB
  run.end("aggregation");
  const v1::RunStatus s = wait_for_verdict(run, "headroom");
  SCOPED_TRACE(verdict_text(s));
  const auto headroom = verdicts_of(s, "headroom");
  ASSERT_EQ(headroom.size(), 1u);
  EXPECT_EQ(headroom[0].severity(), v1::WARNING);
  EXPECT_EQ(headroom[0].phase(), "aggregation");
  // The warning is raised by the first reading past 90%: a periodic sample may catch the spike
  // while its pages are still being touched, so its figure lies between 90% and the spike.
  EXPECT_GT(figure(headroom[0], "fraction"), 0.9);
  EXPECT_LE(figure(headroom[0], "fraction"), 15.0 / 16.0 + 0.01);
  EXPECT_EQ(figure(headroom[0], "peak_exact"), 1);
  // The run's peak is the whole spike, exact through the high-water mark.
  EXPECT_TRUE(s.peak_exact());
  // Of the memory that counts: the RSS level less the child's file-backed pages.
  EXPECT_NEAR(static_cast<double>(s.peak_bytes() + s.baseline().file_bytes()) /
                  static_cast<double>(gib(16)),
              15.0 / 16.0, 0.01);
  EXPECT_TRUE(verdicts_of(s, "over_budget").empty());
}

}  // namespace
}  // namespace ramguard::testing
