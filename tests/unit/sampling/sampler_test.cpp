// The sampler driving a real io_context: a fake tree with exact values and an error target,
// then a real child that grows, shrinks and exits.
#include "sampling/sampler.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "common/log.hpp"
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
  ReadTiming last_timing;
  ReadingSink sink() {
    return [this](const TargetId& id, const Result<MemoryReading>& r, const ReadTiming& t) {
      last_id = id;
      last_timing = t;
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
  good.rss_kb = 9000 * 4;  // the periodic reading is status's
  tree.update(42, good);
  tree.write(43, "status", "garbage\n");
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
  auto key = sampler.add(42, [&](const TargetId&, const Result<MemoryReading>&, const ReadTiming&) {
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

// A coordinator stand-in for the tree scope: forks a worker holding 32 MiB for every byte
// written to it. The test process is single-threaded when it forks (no io_context thread).
class ForkingRoot {
 public:
  ForkingRoot() {
    int to[2];
    int from[2];
    if (::pipe(to) != 0 || ::pipe(from) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::close(to[1]);
      ::close(from[0]);
      char c;
      while (::read(to[0], &c, 1) == 1) {
        if (::fork() != 0) continue;
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);  // dies with the root
        void* p = ::mmap(nullptr, kWorkerBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                         -1, 0);
        if (p != MAP_FAILED) std::memset(p, 1, kWorkerBytes);
        (void)!::write(from[1], "w", 1);
        for (;;) ::pause();
      }
      ::_exit(0);
    }
    ::close(to[0]);
    ::close(from[1]);
    to_ = to[1];
    from_ = from[0];
  }
  ~ForkingRoot() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(to_);
    ::close(from_);
  }
  pid_t pid() const { return pid_; }
  bool fork_worker() {
    char c = 'f';
    return ::write(to_, &c, 1) == 1 && ::read(from_, &c, 1) == 1;
  }
  static constexpr std::size_t kWorkerBytes = 32 * kMiB;

 private:
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
};

// With the proc connector's fork events a tree counts a new worker at the next reading
// without re-walking; without them every reading walks.
TEST(SamplerReal, ATreeFollowsForksWithoutWalking) {
  ForkingRoot root;
  ASSERT_GT(root.pid(), 0);
  ProcFs fs;
  SystemClock clock;
  asio::io_context io;
  auto events = ProcEvents::open(io);
  ASSERT_TRUE(events.ok()) << events.error().message;  // the tests run as root
  Sampler sampler(io, fs, clock, 20ms);
  sampler.follow_forks(**events);
  std::vector<std::pair<std::uint64_t, std::uint64_t>> rss_and_walks;
  auto key = sampler.add(root.pid(),
                         [&](const TargetId&, const Result<MemoryReading>& r, const ReadTiming&) {
                           if (r.ok())
                             rss_and_walks.emplace_back(r->rss_bytes, sampler.tree_walks());
                         });
  ASSERT_TRUE(key.ok()) << key.error().message;
  ASSERT_TRUE(sampler.attach(*key, Scope::kTree).ok());
  EXPECT_EQ(sampler.tree_walks(), 1u);  // the walk when the scope was set
  sampler.start();
  ASSERT_TRUE(run_until(
      io, [&] { return !rss_and_walks.empty(); }, 2000ms));
  const std::uint64_t alone = rss_and_walks.back().first;

  ASSERT_TRUE(root.fork_worker());
  ASSERT_TRUE(run_until(
      io, [&] { return rss_and_walks.back().first >= alone + 30 * kMiB; }, 2000ms))
      << "the worker was not counted; last rss " << rss_and_walks.back().first;
  EXPECT_EQ(rss_and_walks.back().second, 1u) << "the worker was found by a walk, not its fork";

  // A member's exit re-walks the tree: its children are re-parented away, leaving no event.
  const std::vector<pid_t> workers = read_children("/proc", root.pid());
  ASSERT_EQ(workers.size(), 1u);
  ASSERT_EQ(::kill(workers[0], SIGKILL), 0);
  ASSERT_TRUE(run_until(
      io, [&] { return sampler.tree_walks() >= 2; }, 2000ms));
  ASSERT_TRUE(run_until(
      io, [&] { return rss_and_walks.back().first < alone + 8 * kMiB; }, 2000ms));

  // Without fork events every reading walks.
  Sampler walking(io, fs, clock, 20ms);
  std::size_t readings = 0;
  auto other = walking.add(root.pid(), [&](const TargetId&, const Result<MemoryReading>& r,
                                           const ReadTiming&) { readings += r.ok() ? 1 : 0; });
  ASSERT_TRUE(other.ok());
  ASSERT_TRUE(walking.attach(*other, Scope::kTree).ok());
  walking.start();
  ASSERT_TRUE(run_until(
      io, [&] { return readings >= 5; }, 2000ms));
  EXPECT_GE(walking.tree_walks(), readings + 1);
}

// Every call for the time moves it by `step`: each reading then takes exactly `step`.
class SteppingClock final : public Clock {
 public:
  Instant now() const override {
    const Instant at = now_;
    now_.monotonic += step;
    now_.wall += step;
    return at;
  }
  std::chrono::nanoseconds step{0};

 private:
  mutable Instant now_{std::chrono::seconds(1000), std::chrono::seconds(1'700'000'000)};
};

std::vector<std::string> g_logged;
void capture(const std::string& line) {
  g_logged.push_back(line);
}
std::vector<std::string> logged(const std::string& event) {
  std::vector<std::string> out;
  for (const std::string& line : g_logged) {
    if (line.find("event=" + event + " ") != std::string::npos) out.push_back(line);
  }
  return out;
}

TEST(SamplerReadTiming, ReadingsLongerThanTheThresholdCountAndOnlyTheFirstIsLogged) {
  FakeProcTree tree;
  tree.add(42, FakeProcess{});
  ProcFs fs(tree.root(), kPage);
  SteppingClock clock;
  asio::io_context io;
  Sampler sampler(io, fs, clock, 1s);
  EXPECT_EQ(sampler.slow_read(), 10ms);  // sampling.slow_read's default
  auto key = sampler.add(42, nullptr, "run-slow");
  ASSERT_TRUE(key.ok()) << key.error().message;
  g_logged.clear();
  log::set_sink(&capture);

  clock.step = 3ms;
  ASSERT_TRUE(sampler.read_now(*key, false).ok());
  EXPECT_DOUBLE_EQ(sampler.read_timing(*key).last_seconds, 0.003);
  EXPECT_EQ(sampler.read_timing(*key).slow_reads, 0u);
  clock.step = 10ms;  // as long as the threshold is not longer
  ASSERT_TRUE(sampler.read_now(*key, true).ok());
  EXPECT_EQ(sampler.read_timing(*key).slow_reads, 0u);
  EXPECT_TRUE(logged("sampling.slow_read").empty());

  clock.step = 25ms;  // periodic and mark readings alike
  ASSERT_TRUE(sampler.read_now(*key, false).ok());
  ASSERT_TRUE(sampler.read_now(*key, true).ok());
  tree.write(42, "status", "garbage\n");  // a reading that fails took its time too
  EXPECT_FALSE(sampler.read_now(*key, false).ok());
  EXPECT_DOUBLE_EQ(sampler.read_timing(*key).last_seconds, 0.025);
  EXPECT_EQ(sampler.read_timing(*key).slow_reads, 3u);

  // A lower threshold (a reload) judges the next reading; a fast one leaves the count.
  sampler.set_slow_read(1ms);
  clock.step = 2ms;
  EXPECT_FALSE(sampler.read_now(*key, false).ok());
  EXPECT_EQ(sampler.read_timing(*key).slow_reads, 4u);
  clock.step = 500us;
  EXPECT_FALSE(sampler.read_now(*key, false).ok());
  EXPECT_DOUBLE_EQ(sampler.read_timing(*key).last_seconds, 0.0005);
  EXPECT_EQ(sampler.read_timing(*key).slow_reads, 4u);
  log::set_sink(nullptr);

  const auto warnings = logged("sampling.slow_read");
  ASSERT_EQ(warnings.size(), 1u);  // the first slow reading only
  for (const char* field : {"level=warning", "target=run-slow", "pid=42", "scope=process",
                            "read_seconds=0.025", "threshold_seconds=0.01"}) {
    EXPECT_NE(warnings[0].find(field), std::string::npos) << field << " in " << warnings[0];
  }
  EXPECT_EQ(sampler.read_timing(*key + 1).slow_reads, 0u);  // unknown: no timing
}

// The sink gets the timing with its reading; a PSS sum's time is kept but never slow.
TEST(SamplerReadTiming, EachTicksReadingCarriesTheTimingAndPssSumsAreNeverSlow) {
  FakeProcTree tree;
  tree.add(42, FakeProcess{});
  ProcFs fs(tree.root(), kPage);
  SteppingClock clock;
  clock.step = 20ms;
  asio::io_context io;
  Sampler sampler(io, fs, clock, 5ms);
  Collected c;
  auto key = sampler.add(42, c.sink());
  ASSERT_TRUE(key.ok());
  sampler.note_pss_read(*key, 0.075);  // 75 ms: the worker's, not the loop's
  EXPECT_DOUBLE_EQ(sampler.read_timing(*key).last_pss_seconds, 0.075);
  EXPECT_EQ(sampler.read_timing(*key).slow_reads, 0u);
  sampler.note_pss_read(*key + 1, 1.0);  // unknown: ignored

  log::set_sink(&capture);
  sampler.start();
  ASSERT_TRUE(run_until(
      io, [&] { return c.total() >= 3; }, 2000ms));
  sampler.stop();
  log::set_sink(nullptr);
  EXPECT_EQ(c.last_timing.slow_reads, c.total());  // every reading, as it was delivered
  EXPECT_DOUBLE_EQ(c.last_timing.last_seconds, 0.02);
  EXPECT_DOUBLE_EQ(c.last_timing.last_pss_seconds, 0.075);
  EXPECT_EQ(sampler.read_timing(*key).slow_reads, c.total());
}

// On the real steady clock, a tree's reading (its walk included) takes some time: at a 0 s
// threshold every one counts, and the warning names the scope.
TEST(SamplerReadTiming, RealReadingsOfATreeAreTimedOnTheSteadyClock) {
  ForkingRoot root;
  ASSERT_GT(root.pid(), 0);
  ASSERT_TRUE(root.fork_worker());
  ProcFs fs;
  SystemClock clock;
  asio::io_context io;
  Sampler sampler(io, fs, clock, 1s);
  sampler.set_slow_read(0ns);
  auto key = sampler.add(root.pid(), nullptr);
  ASSERT_TRUE(key.ok()) << key.error().message;
  ASSERT_TRUE(sampler.attach(*key, Scope::kTree).ok());
  EXPECT_EQ(sampler.read_timing(*key).slow_reads, 0u);  // setting the scope is not a reading
  g_logged.clear();
  log::set_sink(&capture);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(sampler.read_now(*key, i == 0).ok());
  log::set_sink(nullptr);
  const ReadTiming timing = sampler.read_timing(*key);
  EXPECT_EQ(timing.slow_reads, 3u);
  EXPECT_GT(timing.last_seconds, 0.0);
  EXPECT_LT(timing.last_seconds, 1.0);
  const auto warnings = logged("sampling.slow_read");
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("target=pid-" + std::to_string(root.pid())), std::string::npos)
      << warnings[0];
  EXPECT_NE(warnings[0].find("scope=tree"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("threshold_seconds=0"), std::string::npos) << warnings[0];
}

}  // namespace
}  // namespace ramguard
