// Scenario C (README.md): a slope too small to warn on its own, judged against the budget
// and the declared round count. Floor 10 GiB, 2000 declared rounds, budget 64 GiB, scaled down
// 64x: +54 MB/round runs out of budget within the run and warns; +9 MB/round does not.
#include <gtest/gtest.h>

#include "scenario_support.hpp"

namespace ramguard::testing {
namespace {

constexpr ScenarioScale gib{64};
constexpr ScenarioScale mb{64, 1e6};

constexpr int kRounds = 7;

// Runs kRounds rounds whose floor grows by `step` from 10 GiB; returns the final status.
v1::RunStatus run_series(std::uint64_t step, const std::string& job) {
  auto daemon = start_scenario_daemon(gib.thresholds(64));
  MemChild child;
  Shaper shaper(child);
  ScenarioRun run(*daemon, child.pid(), ScenarioRun::with(job, gib(1), 2000));
  for (int r = 0; r < kRounds; ++r) {
    const std::uint64_t floor = gib(10) + step * static_cast<std::uint64_t>(r);
    run.round(shaper, floor + gib(1), floor);
  }
  return run.status();
}

TEST(ScenarioC, FiftyFourMBPerRoundExhaustsTheBudgetWithinTheDeclaredRounds) {
  const v1::RunStatus s = run_series(mb(54), "scenario-c-54");
  SCOPED_TRACE(verdict_text(s) + floors_text(s));
  EXPECT_TRUE(verdicts_of(s, "leak").empty());
  const auto warnings = verdicts_of(s, "growth_warning");
  ASSERT_EQ(warnings.size(), 1u);
  const v1::Verdict& w = warnings[0];
  EXPECT_EQ(w.severity(), v1::WARNING);
  EXPECT_FALSE(w.cleared());
  EXPECT_LE(w.round(), static_cast<std::uint32_t>(kRounds));
  EXPECT_NEAR(figure(w, "slope_bytes_per_round"), static_cast<double>(mb(54)),
              0.1 * static_cast<double>(mb(54)));
  EXPECT_EQ(figure(w, "declared_rounds"), 2000);
  // (64 - 10.3) GiB / 54 MB: the budget runs out at about round 1070, inside the 2000.
  EXPECT_GT(figure(w, "projected_round"), 900);
  EXPECT_LT(figure(w, "projected_round"), 1300);
  EXPECT_NE(w.summary().find("before the run ends"), std::string::npos) << w.summary();
}

TEST(ScenarioC, NineMBPerRoundOutlastsTheDeclaredRounds) {
  const v1::RunStatus s = run_series(mb(9), "scenario-c-9");
  SCOPED_TRACE(verdict_text(s) + floors_text(s));
  ASSERT_EQ(s.boundaries_size(), kRounds);
  // The floors did grow (so silence is a judgement, not a missing series) ...
  EXPECT_GT(s.boundaries(kRounds - 1).floor_bytes(), s.boundaries(1).floor_bytes());
  // ... but at ~6400 rounds to the budget, nothing warns.
  EXPECT_TRUE(verdicts_of(s, "growth_warning").empty());
  EXPECT_TRUE(verdicts_of(s, "leak").empty());
}

}  // namespace
}  // namespace ramguard::testing
