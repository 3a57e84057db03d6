// Between-round growth on floor series: scenarios A, B, C, E, H of tests/scenarios/README.md
// and the edges.
#include "verdicts/growth.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "unit/verdicts/series_helpers.hpp"

namespace ramguard {
namespace {

using test::floors;
using test::kGB;
using test::kGiB;
using test::replay;

std::size_t count_kind(const std::vector<Verdict>& v, const std::string& kind, bool cleared) {
  std::size_t n = 0;
  for (const auto& x : v) n += (x.kind == kind && x.cleared == cleared) ? 1 : 0;
  return n;
}

// Scenario A: an allocator that reserves, then reuses. Never a leak; plateau at 3.3.
TEST(GrowthScenarioA, PlateauIsNoLeakAndClearsTheEarlyWarning) {
  DetectorParams p;
  const auto f = floors({2.0, 2.6, 3.0, 3.2, 3.3, 3.3, 3.3, 3.3}, kGiB);
  const auto r = replay(f, {}, p);
  for (const auto& s : r.states) EXPECT_NE(s.state, GrowthState::kLeak) << "round " << s.round;
  // +0.6 GiB in round 2 is >= 512 MB: an early warning...
  EXPECT_EQ(r.states[1].state, GrowthState::kWarning);
  ASSERT_EQ(count_kind(r.emitted[1], verdict_kind::kGrowthWarning, false), 1u);
  // ...cleared once growth stops, with the plateau level.
  const GrowthAssessment& last = r.states.back();
  EXPECT_EQ(last.state, GrowthState::kPlateau);
  ASSERT_EQ(last.verdicts.size(), 1u);
  const Verdict& plateau = last.verdicts[0];
  EXPECT_EQ(plateau.kind, verdict_kind::kPlateau);
  EXPECT_EQ(plateau.severity, Severity::kInfo);
  EXPECT_NEAR(plateau.figures.at("plateau_bytes"), 3.3 * kGiB, 1);
  EXPECT_NE(plateau.summary.find("plateau at 3.54 GB"), std::string::npos) << plateau.summary;

  std::size_t cleared = 0, plateaus = 0, warnings = 0;
  for (const auto& e : r.emitted) {
    cleared += count_kind(e, verdict_kind::kGrowthWarning, true);
    plateaus += count_kind(e, verdict_kind::kPlateau, false);
    warnings += count_kind(e, verdict_kind::kGrowthWarning, false);
  }
  EXPECT_EQ(warnings, 1u) << "the warning is not repeated every round";
  EXPECT_EQ(cleared, 1u);
  EXPECT_EQ(plateaus, 1u) << "the plateau is reported once";
}

// Scenario B: one model copy per round. A leak by round 4-5, ~1 copy/round, budget at ~16.
TEST(GrowthScenarioB, SteadyLeakWithCopiesAndProjection) {
  DetectorParams p;
  p.budget_bytes = static_cast<std::uint64_t>(16 * kGiB);
  const GrowthContext ctx{static_cast<std::uint64_t>(0.8 * kGiB), 0};
  const auto f = floors({4.0, 4.8, 5.6, 6.4, 7.2, 8.0}, kGiB);
  const auto r = replay(f, ctx, p);
  EXPECT_EQ(r.states[0].state, GrowthState::kNone) << "round 1 is warm-up";
  EXPECT_EQ(r.states[1].state, GrowthState::kWarning) << "+0.8 GiB in one round warns at once";
  std::size_t first_leak = 0;
  for (std::size_t i = 0; i < r.states.size() && first_leak == 0; ++i) {
    if (r.states[i].state == GrowthState::kLeak) first_leak = i + 1;
  }
  ASSERT_GT(first_leak, 0u);
  EXPECT_LE(first_leak, 5u);
  for (std::size_t i = first_leak - 1; i < r.states.size(); ++i) {
    const GrowthAssessment& s = r.states[i];
    EXPECT_EQ(s.state, GrowthState::kLeak);
    EXPECT_NEAR(s.copies_per_round, 1.0, 0.01);
    EXPECT_NEAR(s.projected_round, 16, 0.5) << "round " << s.round;
    EXPECT_NEAR(s.verdicts.at(0).figures.at("copies_per_round"), 1.0, 0.01);
    EXPECT_EQ(s.verdicts.at(0).severity, Severity::kCritical);
  }
  // The leak is said once (escalation, no cleared warning in between).
  EXPECT_EQ(count_kind(r.emitted[first_leak - 1], verdict_kind::kLeak, false), 1u);
  EXPECT_EQ(count_kind(r.emitted[first_leak - 1], verdict_kind::kGrowthWarning, true), 0u);
  // Each later round restates it as an update (scenario R), never as a new warning.
  for (std::size_t i = first_leak; i < r.emitted.size(); ++i) {
    ASSERT_EQ(r.emitted[i].size(), 1u) << "round " << i + 1;
    EXPECT_TRUE(r.emitted[i][0].update);
    EXPECT_EQ(r.emitted[i][0].kind, verdict_kind::kLeak);
  }
  EXPECT_NE(r.states.back().verdicts[0].summary.find("1.00 model copies/round"), std::string::npos)
      << r.states.back().verdicts[0].summary;
}

// Scenario C: small slopes judged against the budget and the declared round count.
TEST(GrowthScenarioC, SmallSlopeWarnsOnlyWhenTheBudgetRunsOutWithinTheRun) {
  DetectorParams p;
  p.budget_bytes = static_cast<std::uint64_t>(64 * kGiB);
  const GrowthContext ctx{0, 2000};
  const auto series = [](double step_bytes, int rounds) {
    std::vector<double> v;
    for (int i = 0; i < rounds; ++i) v.push_back((10 * kGiB + i * step_bytes) / kGiB);
    return floors(v, kGiB);
  };

  const auto fast = replay(series(54e6, 12), ctx, p);
  const GrowthAssessment& warned = fast.states.back();
  EXPECT_EQ(warned.state, GrowthState::kWarning);
  EXPECT_EQ(warned.reason, "budget");
  const double expected =
      12 + std::ceil((64 * kGiB - static_cast<double>(warned.rss_floor_bytes)) / 54e6);
  EXPECT_NEAR(warned.projected_round, expected, 1.0);
  EXPECT_LT(warned.projected_round, 2000);
  EXPECT_NEAR(warned.slope_bytes_per_round, 54e6, 1e3);

  const auto slow = replay(series(9e6, 120), ctx, p);
  for (const auto& s : slow.states) {
    EXPECT_EQ(s.state, GrowthState::kNone) << "round " << s.round;
    EXPECT_TRUE(s.verdicts.empty());
  }
  // Without declared rounds the 54 MB/round slope alone says nothing.
  const auto undeclared = assess_growth(series(54e6, 12), GrowthContext{}, p);
  EXPECT_EQ(undeclared.state, GrowthState::kNone);
}

// Scenario E: page cache from checkpoint saves grows, anonymous memory is flat.
TEST(GrowthScenarioE, FileBackedGrowthIsNoLeakButIsReported) {
  DetectorParams p;
  std::vector<FloorPoint> f;
  std::vector<FloorPoint> unsplit;
  for (std::uint32_t round = 1; round <= 8; ++round) {
    BoundaryRecord b;
    b.round = round;
    b.settled = true;
    b.reading.anon_bytes = static_cast<std::uint64_t>(2 * kGiB);
    b.reading.file_bytes = static_cast<std::uint64_t>(0.5 * kGiB * round);
    b.reading.rss_bytes = b.reading.anon_bytes + b.reading.file_bytes;
    b.floor_bytes = b.reading.rss_bytes;
    f.push_back(floor_point(b));
    b.reading.file_bytes = 0;  // same RSS, no split known: all of it anonymous
    b.reading.anon_bytes = b.reading.rss_bytes;
    unsplit.push_back(floor_point(b));
  }
  EXPECT_EQ(f[3].growth_bytes, static_cast<std::uint64_t>(2 * kGiB));
  const auto r = replay(f, {}, p);
  for (const auto& s : r.states) EXPECT_EQ(s.state, GrowthState::kNone) << "round " << s.round;
  const GrowthAssessment& last = r.states.back();
  EXPECT_NEAR(last.rss_slope_bytes_per_round, 0.5 * kGiB, 1e3);
  EXPECT_NEAR(last.file_slope_bytes_per_round, 0.5 * kGiB, 1e3);
  EXPECT_NEAR(last.slope_bytes_per_round, 0, 1e3);
  EXPECT_EQ(last.file_bytes, static_cast<std::uint64_t>(4 * kGiB));
  // The split is what keeps it quiet: the same RSS without it is growth.
  EXPECT_NE(assess_growth(unsplit, {}, p).state, GrowthState::kNone);
}

// Scenario H: the investigation's figure (baseline and final builds).
TEST(GrowthScenarioH, BaselineBuildWarnsAfterRoundTwoFinalBuildSaysNothing) {
  DetectorParams p;
  const GrowthContext ctx{2'500'000'000, 0};
  const auto baseline = assess_growth(floors({14.1, 17.3}, kGB), ctx, p);
  ASSERT_EQ(baseline.state, GrowthState::kWarning);
  ASSERT_EQ(baseline.verdicts.size(), 1u);
  const Verdict& v = baseline.verdicts[0];
  EXPECT_EQ(v.kind, verdict_kind::kGrowthWarning);
  EXPECT_EQ(v.round, 2u);
  EXPECT_NEAR(v.figures.at("step_bytes"), 3.2e9, 1e3);
  EXPECT_NEAR(v.figures.at("step_copies"), 1.28, 0.01);
  EXPECT_NE(v.summary.find("14.10 GB to 17.30 GB"), std::string::npos) << v.summary;
  EXPECT_NE(v.summary.find("1.28 model copies"), std::string::npos) << v.summary;

  const auto final_build = assess_growth(floors({6.4, 6.5}, kGB), ctx, p);
  EXPECT_EQ(final_build.state, GrowthState::kNone);
  EXPECT_TRUE(final_build.verdicts.empty());
}

TEST(GrowthSawtooth, PeriodicCleanupIsNoLeakAndDoesNotRewarn) {
  DetectorParams p;
  const auto r = replay(floors({4, 5, 6, 4, 5, 6, 4, 5, 6, 4, 5, 6}, kGB), {}, p);
  for (const auto& s : r.states) EXPECT_NE(s.state, GrowthState::kLeak) << "round " << s.round;
  EXPECT_EQ(r.states[1].state, GrowthState::kWarning);
  EXPECT_EQ(r.states[3].state, GrowthState::kNone) << "the drop clears it";
  EXPECT_EQ(count_kind(r.emitted[3], verdict_kind::kGrowthWarning, true), 1u);
  for (std::size_t i = 4; i < r.states.size(); ++i) {
    EXPECT_EQ(r.states[i].state, GrowthState::kNone) << "round " << i + 1;
    EXPECT_TRUE(r.emitted[i].empty());
  }
  EXPECT_TRUE(r.states.back().sawtooth);
}

TEST(GrowthLeakThatStops, ClearsTheLeakAndReportsThePlateau) {
  DetectorParams p;
  const auto r = replay(floors({4, 5, 6, 7, 8, 8, 8, 8}, kGB), {}, p);
  EXPECT_EQ(r.states[4].state, GrowthState::kLeak);
  EXPECT_EQ(r.states.back().state, GrowthState::kPlateau);
  std::size_t cleared_leaks = 0;
  for (const auto& e : r.emitted) cleared_leaks += count_kind(e, verdict_kind::kLeak, true);
  EXPECT_EQ(cleared_leaks, 1u);
}

struct EdgeCase {
  const char* name;
  std::vector<double> gb;
};

class GrowthQuiet : public ::testing::TestWithParam<EdgeCase> {};

TEST_P(GrowthQuiet, SaysNothing) {
  DetectorParams p;
  const auto f = floors(GetParam().gb, kGB);
  const auto a = assess_growth(f, {}, p);
  EXPECT_EQ(a.state, GrowthState::kNone);
  EXPECT_TRUE(a.verdicts.empty());
  EXPECT_EQ(a.round, f.empty() ? 0u : f.back().round);
  EXPECT_LE(a.slope_bytes_per_round, 0.0);
}

INSTANTIATE_TEST_SUITE_P(Edges, GrowthQuiet,
                         ::testing::Values(EdgeCase{"empty", {}}, EdgeCase{"single_round", {9.0}},
                                           EdgeCase{"equal", {5, 5, 5, 5, 5, 5, 5}},
                                           EdgeCase{"decreasing", {9, 8, 7, 6, 5, 4}},
                                           EdgeCase{"warmup_drop", {20, 5, 5, 5}}),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(GrowthEdges, UnknownModelSizeGivesNoCopies) {
  DetectorParams p;
  const auto a = assess_growth(floors({4, 5, 6, 7, 8}, kGB), GrowthContext{}, p);
  ASSERT_EQ(a.state, GrowthState::kLeak);
  EXPECT_LT(a.copies_per_round, 0);
  EXPECT_EQ(a.verdicts[0].figures.count("copies_per_round"), 0u);
  EXPECT_EQ(a.verdicts[0].summary.find("copies"), std::string::npos) << a.verdicts[0].summary;
  EXPECT_NEAR(a.projected_round, 5 + 8, 0.5) << "a leak projects the budget round";
}

TEST(GrowthEdges, WarmupRoundsAreNotJudged) {
  DetectorParams p;
  p.warmup_rounds = 2;
  // Round 2's jump is warm-up; the round 2 floor is the reference.
  EXPECT_EQ(assess_growth(floors({1, 6, 6.1}, kGB), {}, p).state, GrowthState::kNone);
  p.warmup_rounds = 1;
  EXPECT_EQ(assess_growth(floors({1, 6, 6.1}, kGB), {}, p).state, GrowthState::kWarning);
  p.warmup_rounds = 0;  // the first floor is the reference
  EXPECT_EQ(assess_growth(floors({1, 6}, kGB), {}, p).state, GrowthState::kWarning);
}

TEST(GrowthEdges, FloorUsesSettledMinimumAndCountsSwap) {
  BoundaryRecord b;
  b.round = 3;
  b.reading.rss_bytes = 10'000'000'000;
  b.reading.anon_bytes = 9'000'000'000;
  b.reading.file_bytes = 1'000'000'000;
  b.reading.swap_bytes = 500'000'000;
  b.floor_bytes = 9'000'000'000;
  b.settled = true;
  const FloorPoint fp = floor_point(b);
  EXPECT_EQ(fp.rss_bytes, 9'000'000'000u);
  EXPECT_EQ(fp.growth_bytes, 8'500'000'000u);
  b.settled = false;
  EXPECT_EQ(floor_point(b).rss_bytes, 10'000'000'000u);

  RunLedger ledger;
  ledger.boundaries = {b, b};
  ledger.boundaries[1].settled = true;
  EXPECT_EQ(settled_floors(ledger).size(), 1u);
}

// A leak that goes on (+1 model copy every round for 5 rounds) is restated every round it
// grows, as an update with the copies per round, the total since the warning began and the
// projection; a round that did not grow restates nothing.
TEST(GrowthEdges, GrowthThatGoesOnIsUpdatedEveryRound) {
  DetectorParams p;
  GrowthContext ctx{static_cast<std::uint64_t>(kGB), 10};
  GrowthTracker tracker;
  GrowthAssessment previous;
  std::vector<Verdict> updates;
  const auto f = floors({4, 5, 6, 7, 8}, kGB);
  for (std::size_t i = 0; i < f.size(); ++i) {
    const GrowthAssessment current = tracker.add(f[i], ctx, p);
    const auto out = new_growth_verdicts(previous, current);
    if (i == 1) {
      ASSERT_EQ(out.size(), 1u);
      EXPECT_FALSE(out[0].update);  // the first warning is news
    }
    for (const Verdict& v : out) {
      if (v.update) updates.push_back(v);
    }
    previous = current;
  }
  // Round 3 restates the warning, round 4 escalates it to a leak (news), round 5 restates that.
  ASSERT_EQ(updates.size(), 2u);
  EXPECT_EQ(updates[0].round, 3u);
  EXPECT_EQ(updates[0].kind, verdict_kind::kGrowthWarning);
  const Verdict& last = updates.back();
  EXPECT_EQ(last.round, 5u);
  EXPECT_NEAR(last.figures.at("copies_per_round"), 1.0, 1e-9);
  EXPECT_DOUBLE_EQ(last.figures.at("total_since_bytes"), 4e9);  // since round 1's floor
  EXPECT_GT(last.figures.at("projected_round"), 5.0);
  EXPECT_NE(last.summary.find("since round 1"), std::string::npos) << last.summary;
  EXPECT_NE(last.summary.find("round 5"), std::string::npos) << last.summary;
  // A round that did not grow: no update.
  const GrowthAssessment flat = tracker.add(
      FloorPoint{6, f[4].rss_bytes, 0, f[4].growth_bytes, 0, 0, true, test::at_seconds(400)}, ctx,
      p);
  for (const Verdict& v : new_growth_verdicts(previous, flat)) EXPECT_FALSE(v.update);
}

TEST(GrowthEdges, SameStateEmitsNothingTwice) {
  DetectorParams p;
  const auto f = floors({14.1, 17.3}, kGB);
  const auto a = assess_growth(f, {}, p);
  EXPECT_EQ(new_growth_verdicts(GrowthAssessment{}, a).size(), 1u);
  EXPECT_TRUE(new_growth_verdicts(a, a).empty());
}

}  // namespace
}  // namespace ramguard

namespace ramguard {
namespace {

// A long run judged one floor at a time: the tracker keeps only the rules' windows, yet the
// reference floor (round 1), the step rule's running maximum and the states are those of the
// whole series. 2,000 flat rounds, then a leak of one model copy per round, then a plateau.
TEST(GrowthTracker, LongRunKeepsTheReferenceAndJudgesTheLateLeakAndPlateau) {
  DetectorParams p;
  p.budget_bytes = static_cast<std::uint64_t>(64 * kGiB);
  const GrowthContext ctx{static_cast<std::uint64_t>(0.8 * kGiB), 0};
  std::vector<double> values;
  for (int r = 1; r <= 2000; ++r) values.push_back(4.0 + 0.01 * (r % 3));
  for (int r = 1; r <= 8; ++r) values.push_back(4.0 + 0.8 * r);
  for (int r = 1; r <= 10; ++r) values.push_back(4.0 + 0.8 * 8);
  const auto f = floors(values, kGiB);
  GrowthTracker tracker;
  std::uint32_t first_leak = 0, first_plateau = 0;
  for (const FloorPoint& floor : f) {
    const GrowthAssessment& now = tracker.add(floor, ctx, p);
    if (floor.round <= 2000) {
      ASSERT_EQ(now.state, GrowthState::kNone) << "round " << floor.round;
    }
    if (now.state == GrowthState::kLeak && first_leak == 0) first_leak = now.round;
    if (now.state == GrowthState::kPlateau && first_plateau == 0) first_plateau = now.round;
  }
  EXPECT_EQ(tracker.floors_seen(), f.size());
  ASSERT_GT(first_leak, 2000u);
  EXPECT_LE(first_leak, 2005u);
  ASSERT_GT(first_plateau, 2008u);
  const GrowthAssessment& last = tracker.current();
  EXPECT_EQ(last.state, GrowthState::kPlateau);
  EXPECT_EQ(last.since_round, first_plateau);
  ASSERT_EQ(last.verdicts.size(), 1u);
  EXPECT_EQ(last.verdicts[0].figures.at("reference_round"), 1.0) << "the reference is round 1";
  EXPECT_NE(last.verdicts[0].summary.find("above the round 1 floor"), std::string::npos)
      << last.verdicts[0].summary;
  // The same as judging the whole series at once.
  const GrowthAssessment whole = assess_growth(f, ctx, p);
  EXPECT_EQ(whole.state, last.state);
  EXPECT_EQ(whole.since_round, last.since_round);
  EXPECT_EQ(whole.verdicts[0].summary, last.verdicts[0].summary);
}

}  // namespace
}  // namespace ramguard

namespace ramguard {
namespace {

// Boundaries whose RSS floor climbs 1 GB per round, with allocator facts: what the application
// holds (allocated) and what the allocator keeps free (retained).
std::vector<FloorPoint> floors_with_allocator(bool live_objects_grow) {
  std::vector<FloorPoint> out;
  for (std::uint32_t round = 1; round <= 4; ++round) {
    BoundaryRecord b;
    b.round = round;
    b.reading.rss_bytes = test::bytes(1.0 + round, kGB);
    b.reading.anon_bytes = b.reading.rss_bytes;
    b.reading.at = test::at_seconds(60.0 * round);
    const std::uint64_t live =
        live_objects_grow ? b.reading.rss_bytes - 100'000'000 : 1'500'000'000;
    b.allocator = AllocatorFacts{live, live, b.reading.rss_bytes, b.reading.rss_bytes - live};
    out.push_back(floor_point(b));
  }
  return out;
}

TEST(GrowthAllocatorFacts, FreeMemoryTheAllocatorKeepsIsNotTheApplicationsGrowth) {
  DetectorParams p;
  const auto retained = replay(floors_with_allocator(false), {}, p);
  for (const auto& e : retained.emitted) {
    EXPECT_EQ(count_kind(e, verdict_kind::kGrowthWarning, false), 0u);
    EXPECT_EQ(count_kind(e, verdict_kind::kLeak, false), 0u);
  }
  EXPECT_EQ(floors_with_allocator(false)[3].allocator_free_bytes, 3'500'000'000u);

  // The same RSS with live objects growing is the application's: warned, then a leak, and the
  // text says what was left out.
  const auto live = replay(floors_with_allocator(true), {}, p);
  EXPECT_EQ(count_kind(live.emitted[1], verdict_kind::kGrowthWarning, false), 1u);
  EXPECT_EQ(live.states.back().state, GrowthState::kLeak);
  const Verdict& warning = live.emitted[1][0];
  EXPECT_NE(warning.summary.find("of which the allocator keeps 0.10 GB free"), std::string::npos)
      << warning.summary;
  EXPECT_NE(warning.summary.find("Application floor"), std::string::npos) << warning.summary;
  EXPECT_DOUBLE_EQ(warning.figures.at("allocator_free_bytes"), 100'000'000.0);
}

}  // namespace
}  // namespace ramguard
