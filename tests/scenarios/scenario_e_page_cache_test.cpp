// Scenario E (README.md): page cache from checkpoint saves. Each round's save maps a new
// 0.5 GiB checkpoint file (scaled down 64x: 8 MiB, at the 8 MB growth threshold) while the
// anonymous memory stays flat: no leak, no growth warning, no pressure, and the boundary
// readings show the file-backed part growing.
#include <gtest/gtest.h>

#include "scenario_support.hpp"

namespace ramguard::testing {
namespace {

constexpr ScenarioScale gib{64};

TEST(ScenarioE, CheckpointPageCacheIsNotALeakAndTheSplitShowsIt) {
  auto daemon = start_scenario_daemon(gib.thresholds(16));
  const auto dir = make_temp_dir("scenario-e");
  MemChild child;
  Shaper shaper(child);
  shaper.level(gib(2.5));
  ScenarioRun run(*daemon, child.pid(), ScenarioRun::with("scenario-e", gib(1)));
  constexpr int kRounds = 6;
  for (int r = 1; r <= kRounds; ++r) {
    run.begin("aggregation");
    child.command("spike " + std::to_string(gib(2)) + " 20");
    run.end("aggregation");
    run.begin("save");
    const std::string name = "ckpt" + std::to_string(r);
    child.command("file " + name + " " + (dir / name).string() + " " + std::to_string(gib(0.5)));
    run.end("save");
    run.round_end();
    run.wait_settled(run.rounds_ended());
  }
  const v1::RunStatus s = run.report();
  SCOPED_TRACE(verdict_text(s) + floors_text(s));
  EXPECT_TRUE(verdicts_of(s, "leak").empty());
  EXPECT_TRUE(verdicts_of(s, "growth_warning").empty());
  EXPECT_TRUE(verdicts_of(s, "headroom").empty());
  EXPECT_TRUE(verdicts_of(s, "over_budget").empty());

  // The report's boundary readings: RSS and its file-backed part climb 0.5 GiB (scaled) a
  // round, the anonymous part stays where it was.
  ASSERT_EQ(s.boundaries_size(), kRounds);
  const auto& first = s.boundaries(0).reading();
  const auto& last = s.boundaries(kRounds - 1).reading();
  EXPECT_TRUE(last.complete());
  for (int r = 1; r < kRounds; ++r) {
    const auto& prev = s.boundaries(r - 1).reading();
    const auto& cur = s.boundaries(r).reading();
    EXPECT_NEAR(static_cast<double>(cur.file_bytes()) - static_cast<double>(prev.file_bytes()),
                static_cast<double>(gib(0.5)), 256 * 1024)
        << "round " << r + 1;
  }
  EXPECT_NEAR(static_cast<double>(last.file_bytes()) - static_cast<double>(first.file_bytes()),
              static_cast<double>(gib(2.5)), 1 << 20);
  // Anonymous memory stays flat: well under one round's file growth over the whole run (a
  // sanitizer build of the child keeps ~1 MiB of freed write buffer per save in quarantine).
  EXPECT_LT(static_cast<double>(last.anon_bytes()) - static_cast<double>(first.anon_bytes()),
            static_cast<double>(gib(0.5)));
  EXPECT_GT(last.rss_bytes(), first.rss_bytes() + gib(2.4));  // RSS alone would look like growth
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ramguard::testing
