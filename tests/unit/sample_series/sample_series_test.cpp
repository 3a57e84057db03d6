// Bounded sample memory: a month of 2 s samples stays within the stated bound, min/max survive.
#include "runs/sample_series.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

namespace ramguard {
namespace {

MemoryReading reading_at(double seconds, std::uint64_t rss) {
  MemoryReading r;
  const auto ns = std::chrono::nanoseconds(static_cast<std::int64_t>(seconds * 1e9));
  r.at = {std::chrono::seconds(1000) + ns, std::chrono::seconds(1'700'000'000) + ns};
  r.rss_bytes = rss;
  r.anon_bytes = rss / 2;
  r.file_bytes = rss / 4;
  return r;
}

TEST(SampleSeries, MonthOfTwoSecondSamplesStaysWithinTheStatedBound) {
  SampleSeries s;
  const std::size_t bound = s.capacity_bytes();
  EXPECT_LT(bound, 200u * 1024) << "the bound stated in sample_series.hpp";
  constexpr std::size_t kReadings = 1'300'000;  // ~30 days at 2 s
  constexpr std::size_t kSpike = 500'000, kDip = 800'000;
  std::uint64_t total_max = 0, total_min = UINT64_MAX;
  for (std::size_t i = 0; i < kReadings; ++i) {
    std::uint64_t rss = 4'000'000'000 + (i % 977) * 1'000'000;  // 4.0-5.0 GB saw
    if (i == kSpike) rss = 30'000'000'000;
    if (i == kDip) rss = 1'000'000'000;
    total_max = std::max(total_max, rss);
    total_min = std::min(total_min, rss);
    s.add(reading_at(2.0 * static_cast<double>(i), rss));
    if (i % 65'536 == 0) {
      ASSERT_LE(s.memory_bytes(), bound) << "after " << i << " readings";
    }
  }
  EXPECT_LE(s.memory_bytes(), bound);
  EXPECT_EQ(s.capacity_bytes(), bound) << "the bound does not move";
  EXPECT_EQ(s.total_readings(), kReadings);
  EXPECT_LE(s.bucket_count(), SeriesLimits{}.max_buckets);
  EXPECT_EQ(s.current_bucket_width(), std::chrono::minutes(64));
  // 10 min of 2 s readings stay at full resolution.
  EXPECT_EQ(s.recent_size(), 301u);

  const auto points = s.points();
  std::uint64_t seen_max = 0, seen_min = UINT64_MAX, counted = 0;
  for (std::size_t i = 0; i < points.size(); ++i) {
    seen_max = std::max(seen_max, points[i].rss_max_bytes);
    seen_min = std::min(seen_min, points[i].rss_min_bytes);
    counted += points[i].count;
    if (i > 0) {
      ASSERT_LE(points[i - 1].last.monotonic, points[i].first.monotonic);
    }
  }
  EXPECT_EQ(seen_max, total_max);
  EXPECT_EQ(seen_min, total_min);
  EXPECT_EQ(counted, kReadings) << "every reading is accounted for";

  const auto around = [](std::size_t i) {
    return std::pair{reading_at(2.0 * static_cast<double>(i) - 60, 0).at,
                     reading_at(2.0 * static_cast<double>(i) + 60, 0).at};
  };
  auto [from, to] = around(kDip);
  EXPECT_EQ(s.min_rss_between(from, to), 1'000'000'000u);
  std::tie(from, to) = around(kSpike);
  EXPECT_EQ(s.max_rss_between(from, to), 30'000'000'000u);
  std::tie(from, to) = around(100'000);
  EXPECT_GE(s.min_rss_between(from, to).value(), 4'000'000'000u) << "no dip there";
}

TEST(SampleSeries, RecentReadingsAreExact) {
  SampleSeries s;
  for (int i = 0; i < 100; ++i) s.add(reading_at(2.0 * i, 1'000'000'000 + i));
  EXPECT_EQ(s.bucket_count(), 0u);
  EXPECT_EQ(s.recent_size(), 100u);
  const auto since = s.readings_since(reading_at(150, 0).at);
  ASSERT_EQ(since.size(), 25u);
  EXPECT_EQ(since.front().rss_bytes, 1'000'000'075u);
  EXPECT_EQ(s.latest()->rss_bytes, 1'000'000'099u);
  EXPECT_EQ(s.min_rss_between(reading_at(10, 0).at, reading_at(20, 0).at), 1'000'000'005u);
  EXPECT_FALSE(s.min_rss_between(reading_at(500, 0).at, reading_at(600, 0).at));
  const auto points = s.points();
  ASSERT_EQ(points.size(), 100u);
  EXPECT_FALSE(points[0].folded);
}

TEST(SampleSeries, OldReadingsFoldIntoBucketsWithMinMaxLast) {
  SeriesLimits limits;
  limits.recent_window = std::chrono::seconds(60);
  limits.bucket_width = std::chrono::seconds(30);
  SampleSeries s(limits);
  for (int i = 0; i <= 60; ++i) s.add(reading_at(i * 2.0, i == 3 ? 50 : 1000 + i));
  // Readings older than 60 s before the newest (t = 120) fold: t = 0..58.
  ASSERT_EQ(s.bucket_count(), 2u);
  const auto points = s.points();
  EXPECT_TRUE(points[0].folded);
  EXPECT_EQ(points[0].count, 15u);
  EXPECT_EQ(points[0].rss_min_bytes, 50u);
  EXPECT_EQ(points[0].rss_max_bytes, 1014u);
  EXPECT_EQ(points[0].rss_last_bytes, 1014u);
  EXPECT_EQ(points[0].anon_last_bytes, 507u);
  EXPECT_EQ(s.recent_size(), 31u);
}

TEST(SampleSeries, FastSamplerIsCappedAndLateReadingsKeepOrder) {
  SeriesLimits limits;
  limits.max_recent = 64;
  SampleSeries s(limits);
  for (int i = 0; i < 1000; ++i) s.add(reading_at(i * 0.01, 100 + i));  // 100 Hz
  EXPECT_EQ(s.recent_size(), 64u);
  EXPECT_GE(s.bucket_count(), 1u);
  s.add(reading_at(0.5, 7));  // a late reading, older than the newest
  EXPECT_EQ(s.total_readings(), 1001u);
  EXPECT_EQ(s.min_rss_between(reading_at(0, 0).at, reading_at(20, 0).at), 7u);
  EXPECT_LE(s.memory_bytes(), s.capacity_bytes());
}

TEST(SampleSeries, EmptySeries) {
  SampleSeries s;
  EXPECT_TRUE(s.points().empty());
  EXPECT_FALSE(s.latest());
  EXPECT_FALSE(s.min_rss_between(reading_at(0, 0).at, reading_at(1e6, 0).at));
  EXPECT_TRUE(s.readings_since(reading_at(0, 0).at).empty());
}

}  // namespace
}  // namespace ramguard
