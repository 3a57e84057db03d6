// The release verdict split by the coordinator's end facts: live objects, reference cycles and
// free memory the allocator keeps (the ViT-B/16 FedAvg figures of issue 12: a 0.35 GB model,
// 0.93 GB left above the baseline under glibc, nearly all of it free chunks).
#include "verdicts/release.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "unit/verdicts/series_helpers.hpp"

namespace ramguard {
namespace {

using test::at_seconds;

constexpr std::uint64_t kModel = 350'000'000;

std::vector<MemoryReading> flat(double rss_bytes, double from_seconds, double to_seconds) {
  std::vector<MemoryReading> out;
  for (double t = from_seconds; t <= to_seconds + 1e-9; t += 2) {
    MemoryReading r;
    r.at = at_seconds(t);
    r.rss_bytes = static_cast<std::uint64_t>(rss_bytes);
    r.anon_bytes = r.rss_bytes;  // all anonymous
    out.push_back(r);
  }
  return out;
}

struct Case {
  MemoryReading baseline;
  std::vector<MemoryReading> after;
  ReleaseInput input(std::optional<EndFacts> facts) const {
    ReleaseInput in{baseline,     at_seconds(100), after,       at_seconds(131),
                    std::nullopt, kModel,          std::nullopt};
    in.facts = std::move(facts);
    return in;
  }
};

Case left_resident(double rss_bytes) {
  Case c;
  c.baseline.rss_bytes = 400'000'000;
  c.baseline.anon_bytes = c.baseline.rss_bytes;  // all anonymous
  c.after = flat(rss_bytes, 100, 130);
  return c;
}

EndFacts glibc(std::uint64_t allocated, std::uint64_t retained) {
  EndFacts f;
  f.allocator = AllocatorFacts{allocated, allocated, allocated + retained, retained};
  f.allocator_name = "glibc";
  return f;
}

bool has(const std::string& text, const char* part) {
  return text.find(part) != std::string::npos;
}

TEST(ReleaseSplit, FreeMemoryGlibcKeepsIsNotALeakAndNamesTheRemedy) {
  DetectorParams p;
  p.release_slack_bytes = 100'000'000;
  const Case c = left_resident(1.33e9);
  const auto a = assess_release(c.input(glibc(300'000'000, 900'000'000)), p);
  ASSERT_EQ(a.state, ReleaseState::kFailed);
  ASSERT_TRUE(a.verdict);
  EXPECT_TRUE(a.allocator_retention);
  EXPECT_EQ(a.verdict->severity, Severity::kInfo);  // lower than a leak's warning
  EXPECT_FALSE(a.verdict->passed);
  EXPECT_NEAR(a.held_bytes, 0.93e9, 1);
  EXPECT_NEAR(a.allocator_free_bytes, 0.9e9, 1);
  EXPECT_NEAR(a.live_bytes, 0.03e9, 1);
  const auto& f = a.verdict->figures;
  EXPECT_EQ(f.at("allocator_retention"), 1.0);
  EXPECT_NEAR(f.at("allocator_free_copies"), 0.9e9 / kModel, 1e-6);
  EXPECT_EQ(f.at("allocated_bytes"), 300e6);
  const std::string& s = a.verdict->summary;
  EXPECT_TRUE(has(s, "kept by the allocator, not leaked")) << s;
  EXPECT_FALSE(has(s, "Release failed")) << s;
  EXPECT_TRUE(has(s, "free memory kept by glibc 0.90 GB")) << s;
  EXPECT_TRUE(has(s, "ramguard exec --allocator jemalloc")) << s;
  EXPECT_TRUE(has(s,
                  "MALLOC_ARENA_MAX=1 MALLOC_MMAP_THRESHOLD_=1048576 "
                  "MALLOC_TRIM_THRESHOLD_=134217728"))
      << s;
  EXPECT_TRUE(has(s, "malloc_trim(0)")) << s;
}

TEST(ReleaseSplit, LiveBytesLeftAreStillALeak) {
  DetectorParams p;
  p.release_slack_bytes = 100'000'000;
  const Case c = left_resident(1.33e9);
  // Half of what stays is free memory, the other half live: not "nearly all" the allocator's.
  const auto a = assess_release(c.input(glibc(900'000'000, 450'000'000)), p);
  ASSERT_EQ(a.state, ReleaseState::kFailed);
  EXPECT_FALSE(a.allocator_retention);
  EXPECT_EQ(a.verdict->severity, Severity::kWarning);
  EXPECT_NEAR(a.live_bytes, 0.5e9, 1);  // 0.43 GB free: RSS - allocated bounds it
  EXPECT_EQ(a.verdict->figures.at("allocator_retention"), 0.0);
  const std::string& s = a.verdict->summary;
  EXPECT_TRUE(has(s, "Release failed")) << s;
  EXPECT_TRUE(has(s, "live objects 0.50 GB")) << s;
  EXPECT_TRUE(has(s, "are a leak")) << s;
  EXPECT_TRUE(has(s, "for the allocator's part")) << s;  // its remedy for the free part
  // A few MB of free chunks next to a real leak: no remedy for the allocator's part.
  const auto leak = assess_release(c.input(glibc(1'300'000'000, 1'000'000)), p);
  EXPECT_EQ(leak.verdict->severity, Severity::kWarning);
  EXPECT_FALSE(has(leak.verdict->summary, "for the allocator's part")) << leak.verdict->summary;
}

TEST(ReleaseSplit, FreeChunksAreBoundedByWhatIsResidentAndNotAllocated) {
  DetectorParams p;
  p.release_slack_bytes = 100'000'000;
  const Case c = left_resident(1.33e9);
  // 1.2 GB allocated in a 1.33 GB RSS: of the 0.9 GB glibc lists as free (pages the application
  // trimmed earlier count too) at most 0.13 GB can be resident. A leak, not retention.
  const auto a = assess_release(c.input(glibc(1'200'000'000, 900'000'000)), p);
  EXPECT_FALSE(a.allocator_retention);
  EXPECT_NEAR(a.allocator_free_bytes, 0.13e9, 1);
  EXPECT_NEAR(a.live_bytes, 0.8e9, 1);
  EXPECT_EQ(a.verdict->severity, Severity::kWarning);
}

TEST(ReleaseSplit, WhatStaysAfterATrimProbeIsLive) {
  DetectorParams p;
  p.release_slack_bytes = 100'000'000;
  const Case c = left_resident(1.33e9);
  // The allocator's statistics say 0.9 GB free, but malloc_trim(0) returned only 10 MB of it:
  // the rest is not resident, so what stays is the application's.
  EndFacts f = glibc(300'000'000, 900'000'000);
  f.trim = TrimFacts{1'340'000'000, 1'330'000'000, 0.05};
  const auto a = assess_release(c.input(f), p);
  EXPECT_FALSE(a.allocator_retention);
  EXPECT_EQ(a.verdict->severity, Severity::kWarning);
  EXPECT_EQ(a.allocator_free_bytes, 0);
  EXPECT_EQ(a.verdict->figures.at("trim_freed_bytes"), 10e6);
  EXPECT_TRUE(has(a.verdict->summary, "are a leak")) << a.verdict->summary;
}

TEST(ReleaseSplit, ReferenceCyclesTheGcProbeFreedAreNamed) {
  DetectorParams p;
  p.release_slack_bytes = 100'000'000;
  const Case c = left_resident(1.33e9);
  EndFacts f = glibc(900'000'000, 100'000'000);
  f.gc = GcFacts{2'030'000'000, 1'330'000'000, 12, 0.2};
  const auto a = assess_release(c.input(f), p);
  EXPECT_EQ(a.verdict->severity, Severity::kWarning);
  EXPECT_EQ(a.verdict->figures.at("cycles_bytes"), 700e6);
  EXPECT_NEAR(a.verdict->figures.at("cycles_copies"), 2.0, 1e-9);
  EXPECT_TRUE(has(a.verdict->summary, "0.70 GB (2.00 model copies) held by reference cycles"))
      << a.verdict->summary;
}

TEST(ReleaseSplit, ATrimProbeThatBringsRssBackPassesAndSaysWhy) {
  DetectorParams p;
  p.release_slack_bytes = 100'000'000;
  const Case c = left_resident(0.45e9);
  EndFacts f = glibc(300'000'000, 900'000'000);
  f.trim = TrimFacts{1'330'000'000, 450'000'000, 0.1};
  const auto a = assess_release(c.input(f), p);
  ASSERT_EQ(a.state, ReleaseState::kPassed);
  EXPECT_TRUE(a.verdict->passed);
  EXPECT_EQ(a.verdict->figures.at("trim_freed_bytes"), 880e6);
  const std::string& s = a.verdict->summary;
  EXPECT_TRUE(has(s, "Release passed")) << s;
  EXPECT_TRUE(has(s, "malloc_trim(0)")) << s;
  EXPECT_TRUE(has(s, "Without asking, the allocator keeps it")) << s;
}

TEST(ReleaseSplit, JemallocGetsItsOwnRemedyAndNoFactsKeepTheOldWords) {
  DetectorParams p;
  p.release_slack_bytes = 100'000'000;
  const Case c = left_resident(1.33e9);
  EndFacts f = glibc(300'000'000, 900'000'000);
  f.allocator_name = "jemalloc";
  auto a = assess_release(c.input(f), p);
  EXPECT_TRUE(has(a.verdict->summary, "dirty_decay_ms")) << a.verdict->summary;
  EXPECT_FALSE(has(a.verdict->summary, "MALLOC_ARENA_MAX")) << a.verdict->summary;
  a = assess_release(c.input(std::nullopt), p);
  EXPECT_EQ(a.verdict->severity, Severity::kWarning);
  EXPECT_FALSE(has(a.verdict->summary, "live objects")) << a.verdict->summary;
  EXPECT_EQ(a.verdict->figures.count("allocator_retention"), 0u);
}

// An exit is the kernel's clean-up, not the application's release: a process that held the
// memory past the settle window and then exited fails, with what it held and for how long.
TEST(ReleaseOnExit, HeldPastTheSettleWindowThenExitedFails) {
  DetectorParams p;
  p.release_slack_bytes = 100'000'000;
  Case c = left_resident(1.4e9);
  c.after = flat(1.4e9, 100, 104);  // readings at 100, 102, 104; the exit at 105
  ReleaseInput in = c.input(glibc(1'300'000'000, 50'000'000));
  in.exited = at_seconds(105);
  in.now = at_seconds(105);
  in.settle_seconds = 3;
  const auto a = assess_release(in, p);
  ASSERT_EQ(a.state, ReleaseState::kFailed);
  EXPECT_FALSE(a.verdict->passed);
  EXPECT_EQ(a.verdict->severity, Severity::kWarning);
  EXPECT_DOUBLE_EQ(a.verdict->figures.at("held_seconds"), 5.0);
  EXPECT_DOUBLE_EQ(a.verdict->figures.at("held_bytes"), 1.0e9);
  const std::string& s = a.verdict->summary;
  EXPECT_TRUE(has(s, "Release failed")) << s;
  EXPECT_TRUE(has(s, "held for 5.00 s after the run ended, until the process exited")) << s;
  EXPECT_TRUE(has(s, "live objects")) << s;  // the same split as the grace-expiry verdict
  EXPECT_FALSE(has(s, "passed")) << s;
}

// Exited inside the settle window: no settled reading shows a release. Never a pass.
TEST(ReleaseOnExit, ExitWithinTheSettleWindowIsNotVerified) {
  DetectorParams p;
  p.release_slack_bytes = 100'000'000;
  Case c = left_resident(1.4e9);
  c.after = flat(1.4e9, 100, 100);
  ReleaseInput in = c.input(std::nullopt);
  in.exited = at_seconds(100.2);
  in.now = at_seconds(100.2);
  in.settle_seconds = 3;
  const auto a = assess_release(in, p);
  ASSERT_EQ(a.state, ReleaseState::kNotVerified);
  EXPECT_FALSE(a.verdict->passed);
  EXPECT_EQ(a.verdict->severity, Severity::kInfo);
  EXPECT_EQ(a.verdict->figures.at("not_verified"), 1.0);
  EXPECT_TRUE(has(a.verdict->summary, "Release not verified")) << a.verdict->summary;
  EXPECT_STREQ(release_state_name(a.state), "not_verified");
}

// Freed before the exit: the reading that showed it passes, the exit changes nothing.
TEST(ReleaseOnExit, FreedBeforeTheExitPasses) {
  DetectorParams p;
  p.release_slack_bytes = 100'000'000;
  Case c = left_resident(1.4e9);
  c.after = flat(1.4e9, 100, 100);
  MemoryReading freed = c.after.back();
  freed.at = at_seconds(100.05);
  freed.rss_bytes = freed.anon_bytes = 410'000'000;
  c.after.push_back(freed);
  ReleaseInput in = c.input(std::nullopt);
  in.exited = at_seconds(100.2);
  in.now = at_seconds(100.2);
  const auto a = assess_release(in, p);
  ASSERT_EQ(a.state, ReleaseState::kPassed);
  EXPECT_NEAR(a.seconds_taken, 0.05, 1e-9);
}

}  // namespace
}  // namespace ramguard
