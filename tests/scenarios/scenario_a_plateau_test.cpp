// Scenario A (README.md): an allocator plateau. Floors 2.0, 2.6, 3.0, 3.2, 3.3, 3.3, 3.3,
// 3.3 GiB, scaled down 64x with the thresholds: no leak ever, a "plateau at 3.3" verdict, and
// any early growth warning cleared.
#include <gtest/gtest.h>

#include "scenario_support.hpp"

namespace ramguard::testing {
namespace {

constexpr ScenarioScale gib{64};

TEST(ScenarioA, AllocatorPlateauIsNoLeakAndClearsTheEarlyWarning) {
  auto daemon = start_scenario_daemon(gib.thresholds(16));
  MemChild child;
  Shaper shaper(child);
  ScenarioRun run(*daemon, child.pid(), ScenarioRun::with("scenario-a", gib(0.8)));

  const double floors[] = {2.0, 2.6, 3.0, 3.2, 3.3, 3.3, 3.3, 3.3};
  for (double f : floors) {
    run.round(shaper, gib(f + 0.5), gib(f));
    const v1::RunStatus s = run.status();
    ASSERT_TRUE(verdicts_of(s, "leak").empty()) << "leak at round " << run.rounds_ended() << ":\n"
                                                << verdict_text(s) << floors_text(s);
  }

  const v1::RunStatus s = wait_for_verdict(run, "plateau");
  SCOPED_TRACE(verdict_text(s) + floors_text(s));
  EXPECT_TRUE(verdicts_of(s, "leak").empty());
  ASSERT_EQ(s.boundaries_size(), 8);

  const auto plateaus = verdicts_of(s, "plateau");
  ASSERT_EQ(plateaus.size(), 1u);
  const v1::Verdict& plateau = plateaus[0];
  EXPECT_EQ(plateau.severity(), v1::INFO);
  EXPECT_NE(plateau.summary().find("plateau at"), std::string::npos) << plateau.summary();
  // The plateau level is the 3.3 GiB floor (scaled), to within a MiB of the child's own noise.
  EXPECT_NEAR(figure(plateau, "plateau_bytes"), static_cast<double>(gib(3.3)), 1 << 20);
  EXPECT_GE(plateau.round(), 5u);

  // The 2.0 -> 2.6 step (0.6 GiB > 512 MB) warned at round 2; it must be cleared by now.
  const auto warnings = verdicts_of(s, "growth_warning");
  ASSERT_FALSE(warnings.empty()) << "the 0.6 GiB step of round 2 did not warn";
  EXPECT_EQ(warnings.front().round(), 2u);
  EXPECT_FALSE(warnings.front().cleared());
  EXPECT_TRUE(warnings.back().cleared()) << "the last growth verdict is not a clearing one";
  EXPECT_LE(warnings.back().round(), plateau.round());
}

}  // namespace
}  // namespace ramguard::testing
