// The sampler driving a real io_context: a fake tree with exact values and an error target,
// then a real child that grows, shrinks and exits.
#include "sampling/sampler.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <vector>

#include "unit/procfs/fake_proc.hpp"
#include "unit/procfs/test_child.hpp"

namespace ramguard {
namespace {

using namespace std::chrono_literals;
using testing::FakeProcess;
using testing::FakeProcTree;
using testing::TestChild;
constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kMiB = 1024 * 1024;

struct Collected {
  std::vector<MemoryReading> readings;
  std::vector<std::string> errors;
  TargetId last_id;
  ReadingSink sink() {
    return [this](const TargetId& id, const Result<MemoryReading>& r) {
      last_id = id;
      if (r.ok()) {
        readings.push_back(*r);
      } else {
        errors.push_back(r.error().message);
      }
    };
  }
  std::size_t total() const { return readings.size() + errors.size(); }
};

template <typename Pred>
bool run_until(asio::io_context& io, Pred done, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    io.restart();
    io.run_for(2ms);
  }
  return done();
}

TEST(SamplerFake, TicksReadEveryTargetAndErrorsAreReported) {
  FakeProcTree tree;
  FakeProcess good;
  tree.add(42, good);
  tree.add(43, FakeProcess{});
  ProcFs fs(tree.root(), kPage);
  FakeClock clock;
  asio::io_context io;
  Sampler sampler(io, fs, clock, 10ms);
  Collected a;
  Collected b;
  auto ka = sampler.add(42, a.sink());
  auto kb = sampler.add(43, b.sink());
  ASSERT_TRUE(ka.ok()) << ka.error().message;
  ASSERT_TRUE(kb.ok());
  EXPECT_NE(*ka, *kb);
  sampler.start();
  ASSERT_TRUE(run_until(
      io, [&] { return a.total() >= 3; }, 2000ms));
  EXPECT_EQ(a.readings.back().rss_bytes, 2560 * kPage);
  EXPECT_EQ(a.readings.back().anon_bytes, (2560 - 512) * kPage);
  EXPECT_EQ(a.readings.back().at.monotonic, clock.now().monotonic);  // stamped by the Clock
  EXPECT_EQ(a.last_id, (TargetId{42, 4242}));
  EXPECT_GT(sampler.last_sample_duration_seconds(), 0.0);
  EXPECT_GE(sampler.ticks(), 3u);

  // Values change between ticks; target 43 turns to garbage and must be reported, not dropped.
  good.resident_pages = 9000;
  tree.update(42, good);
  tree.write(43, "statm", "garbage\n");
  clock.advance(5s);
  const std::size_t a_before = a.readings.size();
  ASSERT_TRUE(run_until(
      io, [&] { return b.errors.size() >= 2 && a.readings.size() > a_before; }, 2000ms));
  EXPECT_EQ(a.readings.back().rss_bytes, 9000 * kPage);
  EXPECT_EQ(a.readings.back().at.monotonic, clock.now().monotonic);
  EXPECT_NE(b.errors.back().find("process 43"), std::string::npos) << b.errors.back();
  EXPECT_EQ(sampler.size(), 2u);
  sampler.stop();
}

TEST(SamplerFake, ReadNowResetAndUnknownKeys) {
  FakeProcTree tree;
  tree.add(42, FakeProcess{});
  ProcFs fs(tree.root(), kPage);
  FakeClock clock;
  asio::io_context io;
  Sampler sampler(io, fs, clock, 1s);
  auto key = sampler.add(42, nullptr);
  ASSERT_TRUE(key.ok());
  auto complete = sampler.read_now(*key, true);
  ASSERT_TRUE(complete.ok()) << complete.error().message;
  EXPECT_EQ(complete->source, ReadingSource::kMark);
  EXPECT_EQ(complete->hwm_bytes, 20480u * 1024);
  auto periodic = sampler.read_now(*key, false);
  ASSERT_TRUE(periodic.ok());
  EXPECT_EQ(periodic->source, ReadingSource::kPeriodic);
  ASSERT_TRUE(sampler.reset_hwm(*key).ok());
  EXPECT_EQ(tree.read(42, "clear_refs"), "5");
  EXPECT_EQ(sampler.owner_uid(*key), 1000u);
  EXPECT_EQ(*sampler.is_same_process(*key), true);

  sampler.remove(*key);
  sampler.remove(*key);  // twice is harmless
  EXPECT_FALSE(sampler.read_now(*key, true).ok());
  EXPECT_NE(sampler.reset_hwm(*key).error().message.find("no sampled target"), std::string::npos);
  EXPECT_FALSE(sampler.target(*key).has_value());
  EXPECT_FALSE(sampler.add(99, nullptr).ok());               // no such process
  EXPECT_FALSE(sampler.add(TargetId{42, 1}, nullptr).ok());  // start time differs
  EXPECT_EQ(sampler.size(), 0u);
}

TEST(SamplerFake, SinkMayRemoveItselfAndStopHalts) {
  FakeProcTree tree;
  tree.add(42, FakeProcess{});
  tree.add(43, FakeProcess{});
  ProcFs fs(tree.root(), kPage);
  SystemClock clock;
  asio::io_context io;
  Sampler sampler(io, fs, clock, 5ms);
  int calls = 0;
  TargetKey self = 0;
  auto key = sampler.add(42, [&](const TargetId&, const Result<MemoryReading>&) {
    if (++calls == 3) sampler.remove(self);
  });
  ASSERT_TRUE(key.ok());
  self = *key;
  Collected other;
  ASSERT_TRUE(sampler.add(43, other.sink()).ok());
  sampler.start();
  sampler.start();  // idempotent: still one timer chain
  ASSERT_TRUE(run_until(
      io, [&] { return other.total() >= 8; }, 2000ms));
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(sampler.size(), 1u);
  // One chain: readings of the other target match ticks one for one.
  EXPECT_EQ(other.total(), sampler.ticks());

  sampler.set_interval(2ms);
  EXPECT_EQ(sampler.interval(), 2ms);
  const std::size_t before = other.total();
  ASSERT_TRUE(run_until(
      io, [&] { return other.total() >= before + 5; }, 2000ms));
  EXPECT_EQ(other.total(), sampler.ticks());
  sampler.stop();
  const std::size_t stopped = other.total();
  io.restart();
  io.run_for(50ms);
  EXPECT_EQ(other.total(), stopped);
}

TEST(SamplerReal, FollowsAChildGrowingShrinkingAndExiting) {
  TestChild child;
  ASSERT_TRUE(child.hold(0));
  ProcFs fs;
  SystemClock clock;
  asio::io_context io;
  Sampler sampler(io, fs, clock, 20ms);
  Collected c;
  auto key = sampler.add(child.pid(), c.sink());
  ASSERT_TRUE(key.ok()) << key.error().message;
  sampler.start();
  ASSERT_TRUE(run_until(
      io, [&] { return !c.readings.empty(); }, 2000ms));
  const std::uint64_t base = c.readings.back().rss_bytes;

  ASSERT_TRUE(child.hold(64 * kMiB));
  ASSERT_TRUE(run_until(
      io, [&] { return c.readings.back().rss_bytes >= base + 60 * kMiB; }, 2000ms))
      << "last rss " << c.readings.back().rss_bytes;
  EXPECT_LE(c.readings.back().rss_bytes, base + 72 * kMiB);

  ASSERT_TRUE(child.hold(4 * kMiB));
  ASSERT_TRUE(run_until(
      io, [&] { return c.readings.back().rss_bytes <= base + 8 * kMiB; }, 2000ms))
      << "last rss " << c.readings.back().rss_bytes;

  ASSERT_TRUE(child.exit_with(0));
  child.reap();
  ASSERT_TRUE(run_until(
      io, [&] { return !c.errors.empty(); }, 2000ms));
  EXPECT_EQ(c.errors.back(), "process " + std::to_string(child.pid()) + " has exited");
  EXPECT_EQ(sampler.size(), 1u);  // degraded, not silently removed
  EXPECT_EQ(*sampler.is_same_process(*key), false);
}

}  // namespace
}  // namespace ramguard
