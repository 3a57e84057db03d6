// Runaway, release, budget, estimate, classification and parameter validation on plain values.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "unit/verdicts/series_helpers.hpp"
#include "verdicts/budget.hpp"
#include "verdicts/classify.hpp"
#include "verdicts/estimate.hpp"
#include "verdicts/release.hpp"
#include "verdicts/runaway.hpp"

namespace ramguard {
namespace {

using test::at_seconds;
using test::kGB;
using test::kGiB;

std::vector<MemoryReading> ramp(double start_bytes, double bytes_per_second, double seconds,
                                double every = 1.0) {
  std::vector<MemoryReading> out;
  for (double t = 0; t <= seconds + 1e-9; t += every) {
    MemoryReading r;
    r.at = at_seconds(t);
    r.rss_bytes = static_cast<std::uint64_t>(start_bytes + bytes_per_second * t);
    r.anon_bytes = r.rss_bytes;  // all anonymous
    out.push_back(r);
  }
  return out;
}

TEST(Runaway, SustainedFastGrowthIsTaggedWithThePhase) {
  DetectorParams p;
  const auto r = ramp(4e9, 300e6, 20);
  const auto a = assess_runaway(r, "aggregation", 3, 2'500'000'000, p);
  ASSERT_TRUE(a.runaway);
  ASSERT_TRUE(a.verdict);
  EXPECT_NEAR(a.slope_bytes_per_second, 300e6, 1e3);
  EXPECT_GE(a.window_seconds, p.runaway_min_seconds);
  EXPECT_EQ(a.verdict->phase, "aggregation");
  EXPECT_EQ(a.verdict->round, 3u);
  EXPECT_EQ(a.verdict->kind, verdict_kind::kRunaway);
  EXPECT_NEAR(a.verdict->figures.at("slope_bytes_per_second"), 300e6, 1e3);
  EXPECT_NE(a.verdict->summary.find("during aggregation"), std::string::npos);
}

TEST(Runaway, SlowGrowthShortBurstsAndSingleStepsAreNotRunaway) {
  DetectorParams p;
  EXPECT_FALSE(assess_runaway(ramp(4e9, 100e6, 30), "save", 1, 0, p).runaway);
  EXPECT_FALSE(assess_runaway(ramp(4e9, 900e6, 6), "save", 1, 0, p).runaway) << "only 6 s";
  // One 3 GB allocation in the middle of a flat window: high overall slope, not sustained.
  auto step = ramp(4e9, 0, 12);
  for (auto& r : step) {
    if (seconds_between(step.front().at, r.at) >= 6) r.rss_bytes += 3'000'000'000;
    r.anon_bytes = r.rss_bytes;  // all anonymous
  }
  const auto a = assess_runaway(step, "load", 1, 0, p);
  EXPECT_GT(a.slope_bytes_per_second, p.runaway_bytes_per_second);
  EXPECT_FALSE(a.runaway);
  EXPECT_FALSE(assess_runaway({}, "load", 1, 0, p).runaway);
  EXPECT_FALSE(assess_runaway(std::span(step.data(), 1), "load", 1, 0, p).runaway);
}

TEST(Runaway, WallClockJumpDoesNotBendTheSlope) {
  DetectorParams p;
  auto r = ramp(4e9, 300e6, 20, 2.0);
  for (std::size_t i = 5; i < r.size(); ++i) r[i].at.wall += std::chrono::hours(-3);
  const auto a = assess_runaway(r, "aggregation", 2, 0, p);
  EXPECT_TRUE(a.runaway);
  EXPECT_NEAR(a.slope_bytes_per_second, 300e6, 1e3);
}

// Scenario H: the baseline build still held 26.0 GB after completion; the final build 0.7 GB.
TEST(Release, BaselineBuildFailsHoldingAbout25GB) {
  DetectorParams p;
  MemoryReading baseline;
  baseline.rss_bytes = 900'000'000;
  baseline.anon_bytes = baseline.rss_bytes;  // all anonymous
  const Instant end = at_seconds(100);
  std::vector<MemoryReading> after;
  for (int s = 0; s <= 40; s += 2) {
    MemoryReading r;
    r.at = at_seconds(100 + s);
    r.rss_bytes = 26'000'000'000;
    r.anon_bytes = r.rss_bytes;  // all anonymous
    after.push_back(r);
  }
  ReleaseInput in{baseline, end, after, at_seconds(110), std::nullopt, 2'500'000'000, std::nullopt};
  auto a = assess_release(in, p);
  EXPECT_EQ(a.state, ReleaseState::kPending);
  EXPECT_FALSE(a.verdict);
  in.now = at_seconds(131);
  a = assess_release(in, p);
  ASSERT_EQ(a.state, ReleaseState::kFailed);
  ASSERT_TRUE(a.verdict);
  EXPECT_FALSE(a.verdict->passed);
  EXPECT_NEAR(a.held_bytes, 25.1e9, 1);
  EXPECT_NEAR(a.verdict->figures.at("held_copies"), 10.04, 0.01);
  EXPECT_NE(a.verdict->summary.find("25.10 GB"), std::string::npos) << a.verdict->summary;
}

TEST(Release, FinalBuildPassesWithTheTimeTaken) {
  DetectorParams p;
  MemoryReading baseline;
  baseline.rss_bytes = 600'000'000;
  baseline.anon_bytes = baseline.rss_bytes;  // all anonymous
  std::vector<MemoryReading> after;
  const double rss[] = {9.6e9, 5e9, 0.7e9, 0.7e9};
  for (int i = 0; i < 4; ++i) {
    MemoryReading r;
    r.at = at_seconds(50 + 1.5 * i);
    r.rss_bytes = static_cast<std::uint64_t>(rss[i]);
    r.anon_bytes = r.rss_bytes;  // all anonymous
    after.push_back(r);
  }
  MemoryReading before_end = after[0];
  before_end.at = at_seconds(40);
  before_end.rss_bytes = 100;                    // before the end mark: ignored
  before_end.anon_bytes = before_end.rss_bytes;  // all anonymous
  after.insert(after.begin(), before_end);
  const auto a = assess_release(
      {baseline, at_seconds(50), after, at_seconds(55), std::nullopt, 0, std::nullopt}, p);
  ASSERT_EQ(a.state, ReleaseState::kPassed);
  EXPECT_DOUBLE_EQ(a.seconds_taken, 3.0);
  EXPECT_TRUE(a.verdict->passed);
  EXPECT_EQ(a.verdict->figures.at("taken_seconds"), 3.0);
  EXPECT_EQ(a.verdict->figures.at("limit_bytes"), 1.6e9);
}

TEST(Release, ProcessExitIsNotVerifiedAndNoReadingsFailAtGrace) {
  DetectorParams p;
  MemoryReading baseline;
  baseline.rss_bytes = 1'000'000'000;
  baseline.anon_bytes = baseline.rss_bytes;  // all anonymous
  // An exit is the kernel's clean-up, not a release: without a settled reading, not verified.
  auto a = assess_release(
      {baseline, at_seconds(10), {}, at_seconds(12), at_seconds(11), 0, std::nullopt}, p);
  EXPECT_EQ(a.state, ReleaseState::kNotVerified);
  EXPECT_FALSE(a.verdict->passed);
  EXPECT_DOUBLE_EQ(a.seconds_taken, 1.0);
  a = assess_release({baseline, at_seconds(10), {}, at_seconds(50), std::nullopt, 0, std::nullopt},
                     p);
  EXPECT_EQ(a.state, ReleaseState::kFailed);
  EXPECT_NE(a.verdict->summary.find("no reading"), std::string::npos);
}

// Scenario D: peaks of ~6 GiB against a 16 GiB budget raise nothing.
TEST(Budget, HeadroomOnlyAbove90PercentOverAboveBudget) {
  DetectorParams p;
  p.budget_bytes = static_cast<std::uint64_t>(16 * kGiB);
  BudgetInput in;
  in.counted_bytes = static_cast<std::uint64_t>(2.5 * kGiB);
  in.peak_bytes = static_cast<std::uint64_t>(6 * kGiB);
  in.peak_exact = true;
  in.phase = "aggregation";
  auto a = assess_budget(in, p);
  EXPECT_EQ(a.state, BudgetState::kOk);
  EXPECT_FALSE(a.verdict);
  EXPECT_NEAR(a.fraction, 6.0 / 16, 1e-9);

  in.peak_bytes = static_cast<std::uint64_t>(15 * kGiB);
  a = assess_budget(in, p);
  ASSERT_EQ(a.state, BudgetState::kHeadroom);
  EXPECT_EQ(a.verdict->kind, verdict_kind::kHeadroom);
  EXPECT_EQ(a.verdict->severity, Severity::kWarning);
  EXPECT_EQ(a.verdict->phase, "aggregation");
  EXPECT_NEAR(a.verdict->figures.at("headroom_bytes"), 1 * kGiB, 1);

  in.counted_bytes = static_cast<std::uint64_t>(17 * kGiB);
  a = assess_budget(in, p);
  ASSERT_EQ(a.state, BudgetState::kOver);
  EXPECT_EQ(a.verdict->kind, verdict_kind::kOverBudget);
  EXPECT_EQ(a.verdict->severity, Severity::kCritical);
  EXPECT_NEAR(a.verdict->figures.at("over_bytes"), 1 * kGiB, 1);
  EXPECT_NE(a.verdict->summary.find("counted memory (anon + shmem + swap) 18.25 GB"),
            std::string::npos)
      << a.verdict->summary;
}

TEST(Budget, ASmallExcessIsWrittenWithDigitsThatShowIt) {
  DetectorParams p;
  p.budget_bytes = 300'000'000;
  BudgetInput in;
  in.counted_bytes = 304'900'000;
  in.peak_bytes = 304'900'000;
  auto a = assess_budget(in, p);
  ASSERT_EQ(a.state, BudgetState::kOver);
  EXPECT_NE(
      a.verdict->summary.find(
          "counted memory (anon + shmem + swap) 0.305 GB exceeds the 0.300 GB budget: 4.9 MB over"),
      std::string::npos)
      << a.verdict->summary;
  in.counted_bytes = in.peak_bytes = 290'000'000;  // already reads differently: 2 decimals
  a = assess_budget(in, p);
  ASSERT_EQ(a.state, BudgetState::kHeadroom);
  EXPECT_NE(a.verdict->summary.find("counted memory (anon + shmem + swap) 0.29 GB is 97% of the "
                                    "0.30 GB budget, 10.0 MB left"),
            std::string::npos)
      << a.verdict->summary;
}

TEST(Estimate, DesignFigureAndScenarioF) {
  DetectorParams p;
  auto a = assess_estimate(9'600'000'000, true, 11'100'000'000, at_seconds(1), p);
  ASSERT_TRUE(a);
  EXPECT_TRUE(a->within);
  EXPECT_NEAR(a->ratio, 9.6 / 11.1, 1e-9);
  EXPECT_EQ(a->suggested_bytes, 10'560'000'000u);
  EXPECT_EQ(a->verdict.severity, Severity::kInfo);
  EXPECT_NE(a->verdict.summary.find("10.56 GB"), std::string::npos) << a->verdict.summary;

  a = assess_estimate(37'000'000'000, true, 34'000'000'000, at_seconds(1), p);
  ASSERT_TRUE(a);
  EXPECT_FALSE(a->within);
  EXPECT_EQ(a->verdict.severity, Severity::kWarning);
  EXPECT_EQ(a->suggested_bytes, 40'700'000'000u);
  // A few percent over with headroom left is calibration news, not a warning.
  a = assess_estimate(1'530'000'000, true, 1'500'000'000, at_seconds(1), p);
  ASSERT_TRUE(a);
  EXPECT_FALSE(a->within);
  EXPECT_EQ(a->verdict.severity, Severity::kInfo);
  EXPECT_NE(a->verdict.summary.find("only the next estimate needs it"), std::string::npos)
      << a->verdict.summary;
  // Past the documented ratio it warns, with headroom or not.
  a = assess_estimate(2'000'000'000, true, 1'500'000'000, at_seconds(1), p);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->verdict.severity, Severity::kWarning);
  EXPECT_FALSE(assess_estimate(5, true, 0, at_seconds(1), p)) << "no estimate";
  EXPECT_FALSE(assess_estimate(0, true, 5, at_seconds(1), p)) << "no peak";
}

BoundaryRecord boundary(std::uint32_t round, double floor_gb) {
  BoundaryRecord b;
  b.round = round;
  b.settled = true;
  b.floor_bytes = static_cast<std::uint64_t>(floor_gb * kGB);
  b.reading.rss_bytes = b.floor_bytes;
  b.reading.anon_bytes = b.reading.rss_bytes;  // all anonymous
  b.reading.at = at_seconds(round * 60.0);
  return b;
}

TEST(Classify, ReferenceCyclesFromTheGcProbe) {
  DetectorParams p;
  std::vector<BoundaryRecord> b{boundary(1, 14.1), boundary(2, 14.2)};
  b[1].gc = GcFacts{17'300'000'000, 14'200'000'000, 120, 0.4};
  const auto c = classify_growth(b, 2'500'000'000, p);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->growth_class, GrowthClass::kReferenceCycles);
  EXPECT_NEAR(c->gc_freed_bytes, 3.1e9, 1);
  EXPECT_NEAR(c->rss_growth_bytes, 3.2e9, 1);
  EXPECT_EQ(c->verdict.kind, verdict_kind::kGrowthClass);
  EXPECT_EQ(c->verdict.summary.rfind("reference_cycles", 0), 0u) << c->verdict.summary;
  EXPECT_NE(c->verdict.summary.find("1.24 model copies"), std::string::npos);
}

TEST(Classify, LiveObjectsVersusAllocatorRetention) {
  DetectorParams p;
  std::vector<BoundaryRecord> b{boundary(1, 4.0), boundary(2, 6.0)};
  b[0].allocator = AllocatorFacts{3'000'000'000, 0, 0, 0};
  b[1].allocator = AllocatorFacts{4'900'000'000, 0, 0, 0};
  auto c = classify_growth(b, 0, p);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->growth_class, GrowthClass::kLiveObjects);
  EXPECT_NEAR(c->allocated_growth_bytes, 1.9e9, 1);

  // Allocated bytes flat and the allocator's kept-free bytes up by the growth: measured
  // retention, with the remedy named.
  b[1].allocator->allocated_bytes = 3'100'000'000;
  b[1].allocator->retained_bytes = 1'800'000'000;
  c = classify_growth(b, 0, p);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->growth_class, GrowthClass::kAllocatorRetention);
  EXPECT_STREQ(growth_class_name(c->growth_class), "allocator_retention");
  EXPECT_NE(c->verdict.summary.find("ramguard exec --allocator jemalloc"), std::string::npos)
      << c->verdict.summary;
  EXPECT_NE(c->verdict.summary.find("MALLOC_ARENA_MAX"), std::string::npos);

  // Neither allocated nor kept-free bytes grew: never retention by elimination. In a process
  // the growth is outside the heap; in a tree or cgroup it is in the other processes.
  b[1].allocator->retained_bytes = 0;
  c = classify_growth(b, 0, p);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->growth_class, GrowthClass::kOutsideHeap);
  EXPECT_NE(c->verdict.summary.find("not in the allocator's heap"), std::string::npos)
      << c->verdict.summary;
  for (Scope scope : {Scope::kTree, Scope::kCgroup}) {
    c = classify_growth(b, 0, p, scope);
    ASSERT_TRUE(c);
    EXPECT_EQ(c->growth_class, GrowthClass::kOtherProcesses) << scope_name(scope);
    EXPECT_EQ(c->verdict.summary.rfind("other_processes", 0), 0u) << c->verdict.summary;
    EXPECT_EQ(c->verdict.summary.find("allocator_retention"), std::string::npos);
  }

  b[1].floor_bytes = b[0].floor_bytes + 100'000'000;  // too little growth to classify
  EXPECT_FALSE(classify_growth(b, 0, p));
  b[1].allocator.reset();
  EXPECT_FALSE(classify_growth(b, 0, p)) << "no facts";
  EXPECT_FALSE(classify_growth({}, 0, p));
}

TEST(Params, DefaultsAreValidAndNonsenseIsNamed) {
  DetectorParams p;
  EXPECT_TRUE(validate_params(p));
  EXPECT_EQ(p.budget_bytes, 16'000'000'000u);
  ASSERT_EQ(p.phase_gaps.size(), 1u);
  EXPECT_EQ(phase_gap_rule_name(p.phase_gaps[0]), "aggregation.end -> synchronization.begin");

  auto bad = p;
  bad.release_grace_seconds = 0;
  auto s = validate_params(bad);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message.find("release_grace_seconds"), std::string::npos);
  bad = p;
  bad.fit_rounds = 3;
  EXPECT_FALSE(validate_params(bad));
  bad = p;
  bad.min_fit_r2 = 1.5;
  EXPECT_FALSE(validate_params(bad));
  bad = p;
  bad.runaway_bytes_per_second = -1;
  EXPECT_FALSE(validate_params(bad));
  bad = p;
  bad.phase_gaps[0].max_seconds = 0;
  EXPECT_FALSE(validate_params(bad));
}

}  // namespace
}  // namespace ramguard
