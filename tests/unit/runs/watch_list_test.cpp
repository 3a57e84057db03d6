// Watched PIDs without a run, against a real child: readings, the exact peak and the exit.
#include "runs/watch_list.hpp"

#include <gtest/gtest.h>

#include "unit/procfs/test_child.hpp"
#include "unit/runs/run_until.hpp"

namespace ramguard::test {
namespace {

using namespace std::chrono_literals;
using ramguard::testing::TestChild;

struct SeriesLog final : TargetObserver {
  void target_reading(const TargetRef& target, const MemoryReading& r, std::uint64_t peak, bool,
                      const ReadTiming& timing) override {
    last_timing = timing;
    last_job = std::string(target.job);
    last_rss = r.rss_bytes;
    last_peak = peak;
    ++readings;
  }
  void target_state(const TargetRef&, bool up, std::string_view why) override {
    readable = up;
    reason = std::string(why);
  }
  void target_retired(const TargetRef&, Instant) override { ++retired; }
  std::string last_job, reason;
  ReadTiming last_timing;
  std::uint64_t last_rss = 0, last_peak = 0;
  int readings = 0, retired = 0;
  bool readable = false;
};

TEST(WatchListReal, FollowsAChildCatchesItsSpikeAndNoticesItsExit) {
  TestChild child;
  ASSERT_TRUE(child.hold(16 * TestChild::kMiB));
  asio::io_context io;
  SystemClock clock;
  ProcFs procfs;
  Sampler sampler(io, procfs, clock, 20ms);
  ExitWatcher exits(io);
  WatchList watches(sampler, exits, clock);
  SeriesLog log;
  watches.set_observer(&log);
  ASSERT_TRUE(watches.add(child.pid()).ok());
  EXPECT_TRUE(log.readable);
  EXPECT_EQ(log.last_job, "pid-" + std::to_string(child.pid()));
  auto again = watches.add(child.pid());
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.error().message.find("already watched"), std::string::npos);

  sampler.start();
  ASSERT_TRUE(child.spike(128 * TestChild::kMiB));  // between two samples
  ASSERT_TRUE(run_until(
      io, [&] { return log.last_peak >= 128 * TestChild::kMiB; }, 2000ms))
      << "peak " << log.last_peak;
  EXPECT_LT(log.last_rss, 64 * TestChild::kMiB);  // the spike is gone; the peak remembers it

  ASSERT_TRUE(child.exit_with(0));
  ASSERT_TRUE(run_until(
      io, [&] { return log.retired == 1; }, 2000ms));
  EXPECT_FALSE(log.readable);
  EXPECT_EQ(log.reason, "exited");
  EXPECT_FALSE(watches.watching(child.pid()));
  EXPECT_EQ(sampler.size(), 0u);
  child.reap();
}

// The sampler's timing of each reading reaches the observer with it; at a 0 s threshold every
// reading counts as slow, the watch's first (complete) reading included.
TEST(WatchListReal, EachReadingCarriesItsTargetsReadTiming) {
  TestChild child;
  asio::io_context io;
  SystemClock clock;
  ProcFs procfs;
  Sampler sampler(io, procfs, clock, 10ms);
  sampler.set_slow_read(0ns);
  ExitWatcher exits(io);
  WatchList watches(sampler, exits, clock);
  SeriesLog log;
  watches.set_observer(&log);
  ASSERT_TRUE(watches.add(child.pid()).ok());
  EXPECT_EQ(log.readings, 1);
  EXPECT_EQ(log.last_timing.slow_reads, 1u);
  EXPECT_GT(log.last_timing.last_seconds, 0.0);
  sampler.start();
  ASSERT_TRUE(run_until(
      io, [&] { return log.readings >= 4; }, 2000ms));
  EXPECT_GE(log.last_timing.slow_reads, static_cast<std::uint64_t>(log.readings));
  EXPECT_GT(log.last_timing.last_seconds, 0.0);
  EXPECT_LT(log.last_timing.last_seconds, 1.0);
  sampler.stop();
}

TEST(WatchListReal, APidThatDoesNotExistIsRefusedWithTheReason) {
  asio::io_context io;
  SystemClock clock;
  ProcFs procfs;
  Sampler sampler(io, procfs, clock, 20ms);
  ExitWatcher exits(io);
  WatchList watches(sampler, exits, clock);
  auto added = watches.add(999999999);
  ASSERT_FALSE(added.ok());
  EXPECT_NE(added.error().message.find("999999999"), std::string::npos);
  EXPECT_EQ(watches.size(), 0u);
}

}  // namespace
}  // namespace ramguard::test
