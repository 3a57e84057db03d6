// Scenario B (README.md): a steady leak of one model copy per round. Model 0.8 GiB, floors
// 4.0, 4.8, ... 8.0 GiB, budget 16 GiB, all scaled down 64x: a `leak` by round 4-5 at the
// latest, ~1.0 model copy per round, and the budget projected to run out at about round 16.
#include <gtest/gtest.h>

#include "scenario_support.hpp"

namespace ramguard::testing {
namespace {

constexpr ScenarioScale gib{64};

TEST(ScenarioB, SteadyLeakOfOneModelCopyPerRound) {
  auto daemon = start_scenario_daemon(gib.thresholds(16));
  MemChild child;
  Shaper shaper(child);
  ScenarioRun run(*daemon, child.pid(), ScenarioRun::with("scenario-b", gib(0.8)));

  std::uint32_t leak_round = 0;
  for (int r = 0; r < 6; ++r) {
    const double floor = 4.0 + 0.8 * r;
    run.round(shaper, gib(floor + 1.6), gib(floor));  // aggregation holds two more copies
    const v1::RunStatus s = run.status();
    if (leak_round == 0 && !verdicts_of(s, "leak").empty()) leak_round = run.rounds_ended();
  }
  const v1::RunStatus s = run.status();
  SCOPED_TRACE(verdict_text(s) + floors_text(s));
  ASSERT_NE(leak_round, 0u) << "no leak verdict after 6 rounds";
  EXPECT_LE(leak_round, 5u);

  // Raised once, never cleared: the floor kept growing; each later round restates it as an
  // update with that round's figures (scenario R).
  std::vector<v1::Verdict> leaks, updates;
  for (const v1::Verdict& v : verdicts_of(s, "leak")) (v.update() ? updates : leaks).push_back(v);
  ASSERT_EQ(leaks.size(), 1u);
  ASSERT_EQ(updates.size(), 6u - leak_round);
  for (std::size_t i = 0; i < updates.size(); ++i) {
    EXPECT_EQ(updates[i].round(), leak_round + 1 + i) << updates[i].summary();
    EXPECT_NEAR(figure(updates[i], "copies_per_round"), 1.0, 0.1) << updates[i].summary();
    EXPECT_NEAR(figure(updates[i], "total_since_copies"),
                static_cast<double>(updates[i].round()) - 1.0, 0.2)
        << updates[i].summary();
  }
  const v1::Verdict& leak = leaks[0];
  EXPECT_EQ(leak.severity(), v1::CRITICAL);
  EXPECT_FALSE(leak.cleared());
  EXPECT_EQ(leak.round(), leak_round);
  EXPECT_NEAR(figure(leak, "copies_per_round"), 1.0, 0.1);
  EXPECT_NEAR(figure(leak, "slope_bytes_per_round"), static_cast<double>(gib(0.8)),
              0.1 * static_cast<double>(gib(0.8)));
  EXPECT_GE(figure(leak, "fit_r2"), 0.99);
  // 16 GiB is reached 8 copies above the round-6 floor of 8.0 (or 12 above round 4's 6.4):
  // round 16 either way.
  EXPECT_NEAR(figure(leak, "projected_round"), 16, 1);
  EXPECT_NE(leak.summary().find("budget is reached at about round"), std::string::npos)
      << leak.summary();

  // The first step (0.8 GiB > 512 MB) warned before the fit had enough rounds; the leak then
  // escalated it rather than clearing it.
  const auto warnings = verdicts_of(s, "growth_warning");
  ASSERT_FALSE(warnings.empty());
  EXPECT_EQ(warnings.front().round(), 2u);
  for (const auto& w : warnings) EXPECT_FALSE(w.cleared()) << w.summary();
}

}  // namespace
}  // namespace ramguard::testing
