// The reader against a fake tree (exact values, hostile comm, clear_refs as a plain file) and
// against real forked children (readings follow memory, HWM reset, dead and reused PIDs).
#include "procfs/proc_fs.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "unit/procfs/fake_proc.hpp"
#include "unit/procfs/test_child.hpp"

namespace ramguard {
namespace {

using testing::FakeProcess;
using testing::FakeProcTree;
using testing::TestChild;

constexpr std::uint64_t kPage = 4096;
constexpr std::uint64_t kMiB = 1024 * 1024;
constexpr std::uint64_t kTolerance = 8 * kMiB;

TEST(ProcFsFake, OpensAndReadsPeriodic) {
  FakeProcTree tree;
  FakeProcess p;
  tree.add(42, p);
  ProcFs fs(tree.root(), kPage);
  auto h = fs.open(42);
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_EQ(h->id(), (TargetId{42, 4242}));
  EXPECT_EQ(h->uid(), 1000u);
  EXPECT_EQ(h->name(), "coordinator");

  const Instant at{std::chrono::seconds(5), std::chrono::seconds(6)};
  auto r = h->read_statm(at);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->source, ReadingSource::kPeriodic);
  EXPECT_EQ(r->at.monotonic, at.monotonic);
  EXPECT_EQ(r->rss_bytes, 2560 * kPage);
  EXPECT_EQ(r->file_bytes, 512 * kPage);
  EXPECT_EQ(r->anon_bytes, (2560 - 512) * kPage);
  EXPECT_EQ(r->hwm_bytes, 0u);

  // The kept-open fd sees new contents without reopening.
  p.resident_pages = 5000;
  tree.update(42, p);
  r = h->read_statm(at);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->rss_bytes, 5000 * kPage);
}

// Shared memory counts the same between marks as at them: the periodic reading splits shmem
// from file (status), where statm's "shared" would lump it with the page cache.
TEST(ProcFsFake, PeriodicReadingCountsShmemLikeAMark) {
  FakeProcTree tree;
  tree.add(42, FakeProcess{});
  ProcFs fs(tree.root(), kPage);
  auto h = fs.open(42);
  ASSERT_TRUE(h.ok()) << h.error().message;
  auto periodic = h->read_periodic(Instant{});
  auto mark = h->read_complete(Instant{});
  ASSERT_TRUE(periodic.ok() && mark.ok());
  EXPECT_EQ(periodic->source, ReadingSource::kPeriodic);
  EXPECT_EQ(periodic->shmem_bytes, 512u * 1024);
  EXPECT_EQ(periodic->file_bytes, 1536u * 1024);
  EXPECT_EQ(periodic->counted_bytes(), mark->counted_bytes());
  EXPECT_EQ(periodic->hwm_bytes, 0u);  // folded at marks only
}

TEST(ProcFsFake, ReadsComplete) {
  FakeProcTree tree;
  tree.add(42, FakeProcess{});
  ProcFs fs(tree.root(), kPage);
  auto h = fs.open(42);
  ASSERT_TRUE(h.ok()) << h.error().message;
  auto r = h->read_complete(Instant{});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->source, ReadingSource::kMark);
  EXPECT_EQ(r->rss_bytes, 10240u * 1024);
  EXPECT_EQ(r->hwm_bytes, 20480u * 1024);
  EXPECT_EQ(r->anon_bytes, 8192u * 1024);
  EXPECT_EQ(r->file_bytes, 1536u * 1024);
  EXPECT_EQ(r->shmem_bytes, 512u * 1024);
  EXPECT_EQ(r->swap_bytes, 64u * 1024);
}

TEST(ProcFsFake, ResetHwmWritesFive) {
  FakeProcTree tree;
  tree.add(42, FakeProcess{});
  ProcFs fs(tree.root(), kPage);
  auto h = fs.open(42);
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(h->reset_hwm().ok());
  EXPECT_EQ(tree.read(42, "clear_refs"), "5");
  ASSERT_TRUE(h->reset_hwm().ok());  // kept open, written at offset 0 again
  EXPECT_EQ(tree.read(42, "clear_refs"), "5");
}

TEST(ProcFsFake, ResetHwmReportsMissingFile) {
  FakeProcTree tree;
  tree.add(42, FakeProcess{});
  std::filesystem::remove(tree.dir(42) / "clear_refs");
  ProcFs fs(tree.root(), kPage);
  auto h = fs.open(42);
  ASSERT_TRUE(h.ok());
  auto s = h->reset_hwm();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("cannot reset high-water mark of PID 42"), std::string::npos)
      << s.error().message;
  EXPECT_NE(s.error().message.find("No such file"), std::string::npos) << s.error().message;
}

TEST(ProcFsFake, ReusedPidIsDetected) {
  FakeProcTree tree;
  FakeProcess p;
  tree.add(42, p);
  ProcFs fs(tree.root(), kPage);
  auto h = fs.open(42);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(*h->is_same_process(), true);
  EXPECT_EQ(*fs.is_alive(h->id()), true);
  p.start_time_ticks = 9999;  // another process got PID 42
  tree.update(42, p);
  EXPECT_EQ(*h->is_same_process(), false);
  EXPECT_EQ(*fs.is_alive(TargetId{42, 4242}), false);
  EXPECT_EQ(fs.identify(42)->start_time_ticks, 9999u);
  tree.remove(42);
  EXPECT_EQ(*h->is_same_process(), false);
  EXPECT_EQ(*fs.is_alive(TargetId{42, 9999}), false);
}

TEST(ProcFsFake, OpenErrorsNameTheProblem) {
  FakeProcTree tree;
  ProcFs fs(tree.root(), kPage);
  auto missing = fs.open(77);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("PID 77: no such process"), std::string::npos)
      << missing.error().message;
  EXPECT_FALSE(fs.open(0).ok());
  EXPECT_FALSE(fs.open(-5).ok());

  // A kernel thread: status without memory lines.
  tree.add(2, FakeProcess{});
  tree.write(2, "status", "Name:\tkthreadd\nState:\tS (sleeping)\nUid:\t0\t0\t0\t0\n");
  auto kthread = fs.open(2);
  ASSERT_FALSE(kthread.ok());
  EXPECT_NE(kthread.error().message.find("VmRSS"), std::string::npos) << kthread.error().message;

  // Garbage in stat, statm: errors, not crashes.
  tree.add(3, FakeProcess{});
  tree.write(3, "stat", "3 (x");
  EXPECT_FALSE(fs.open(3).ok());
  tree.add(4, FakeProcess{});
  tree.write(4, "statm", "lots of garbage\n");
  auto bad_statm = fs.open(4);
  ASSERT_FALSE(bad_statm.ok());
  EXPECT_NE(bad_statm.error().message.find("statm"), std::string::npos);
  // stat naming a different PID is a broken tree.
  tree.add(5, FakeProcess{});
  tree.write(5, "stat", testing::stat_text(6, FakeProcess{}));
  EXPECT_FALSE(fs.open(5).ok());
}

TEST(ProcFsFake, GarbageAfterOpenIsAnErrorReading) {
  FakeProcTree tree;
  tree.add(42, FakeProcess{});
  ProcFs fs(tree.root(), kPage);
  auto h = fs.open(42);
  ASSERT_TRUE(h.ok());
  tree.write(42, "statm", "99999999999999999999999999 1 0 0 0 0 0\n");
  auto r = h->read_statm(Instant{});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("process 42"), std::string::npos) << r.error().message;
  tree.write(42, "status", "");
  EXPECT_FALSE(h->read_complete(Instant{}).ok());
  // A zombie: statm all zeros, status without memory lines.
  tree.write(42, "statm", "0 0 0 0 0 0 0\n");
  tree.write(42, "status", "Name:\tx\nState:\tZ (zombie)\nUid:\t0\t0\t0\t0\n");
  EXPECT_EQ(h->read_periodic(Instant{}).error().message, "process 42 has exited");
  EXPECT_EQ(h->read_complete(Instant{}).error().message, "process 42 has exited");
  // Killed and exiting, not yet a zombie: still running, but its memory is already gone.
  tree.write(42, "status", "Name:\tx\nState:\tR (running)\nUid:\t0\t0\t0\t0\n");
  EXPECT_EQ(h->read_periodic(Instant{}).error().kind, ErrorKind::kNotFound);
}

// The admission baseline's one-shot read and the kept-open handle's reads follow one rule
// (parse_status's): a zombie, and a killed process whose status has lost its Vm lines, have
// exited; a status that is merely broken is not an exit.
TEST(ProcFsFake, SnapshotAndHandleAgreeOnAnExit) {
  FakeProcTree tree;
  tree.add(42, FakeProcess{});
  ProcFs fs(tree.root(), kPage);
  auto h = fs.open(42);
  ASSERT_TRUE(h.ok()) << h.error().message;
  ASSERT_TRUE(fs.snapshot(42).ok());
  const std::pair<const char*, std::string> exits[] = {
      {"zombie", "Name:\tx\nState:\tZ (zombie)\nUid:\t0\t0\t0\t0\n"},
      {"killed, memory gone", "Name:\tx\nState:\tR (running)\nUid:\t0\t0\t0\t0\n"},
      {"killed in D", "Name:\tx\nState:\tD (disk sleep)\nUid:\t0\t0\t0\t0\nThreads:\t1\n"},
  };
  for (const auto& [what, text] : exits) {
    SCOPED_TRACE(what);
    tree.write(42, "status", text);
    auto snap = fs.snapshot(42);
    ASSERT_FALSE(snap.ok());
    EXPECT_EQ(snap.error().kind, ErrorKind::kNotFound);
    EXPECT_EQ(snap.error().message, "cannot read PID 42: process has exited");
    auto read = h->read_periodic(Instant{});
    ASSERT_FALSE(read.ok());
    EXPECT_EQ(read.error().kind, ErrorKind::kNotFound);
  }
  // Vm lines present but one missing: a broken status, named, not an exit.
  tree.write(42, "status", "Name:\tx\nState:\tR (running)\nUid:\t0\t0\t0\t0\nVmSize:\t 10 kB\n");
  auto broken = fs.snapshot(42);
  ASSERT_FALSE(broken.ok());
  EXPECT_EQ(broken.error().kind, ErrorKind::kInvalidArgument);
  EXPECT_NE(broken.error().message.find("lacks VmRSS"), std::string::npos)
      << broken.error().message;
  EXPECT_EQ(h->read_periodic(Instant{}).error().kind, ErrorKind::kInvalidArgument);
}

TEST(ProcFsReal, ReadsFollowARealChild) {
  TestChild child;
  ASSERT_GT(child.pid(), 0);
  ASSERT_TRUE(child.hold(0));
  ProcFs fs;
  auto h = fs.open(child.pid());
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_EQ(h->uid(), ::getuid());
  auto base = h->read_periodic(Instant{});
  ASSERT_TRUE(base.ok()) << base.error().message;

  ASSERT_TRUE(child.hold(64 * kMiB));
  auto grown = h->read_periodic(Instant{});
  ASSERT_TRUE(grown.ok());
  EXPECT_NEAR(static_cast<double>(grown->rss_bytes - base->rss_bytes), 64.0 * kMiB, kTolerance);
  EXPECT_NEAR(static_cast<double>(grown->anon_bytes - base->anon_bytes), 64.0 * kMiB, kTolerance);
  auto complete = h->read_complete(Instant{});
  ASSERT_TRUE(complete.ok()) << complete.error().message;
  EXPECT_NEAR(static_cast<double>(complete->rss_bytes), static_cast<double>(grown->rss_bytes),
              kTolerance);
  EXPECT_GE(complete->hwm_bytes, complete->rss_bytes);

  ASSERT_TRUE(child.hold(8 * kMiB));
  auto shrunk = h->read_periodic(Instant{});
  ASSERT_TRUE(shrunk.ok());
  EXPECT_NEAR(static_cast<double>(shrunk->rss_bytes - base->rss_bytes), 8.0 * kMiB, kTolerance);
  // The high-water mark still remembers the 64 MiB ...
  auto before_reset = h->read_complete(Instant{});
  ASSERT_TRUE(before_reset.ok());
  EXPECT_GE(before_reset->hwm_bytes + kTolerance, grown->rss_bytes);
  // ... until it is reset: then it is near the current RSS.
  ASSERT_TRUE(h->reset_hwm().ok());
  auto after_reset = h->read_complete(Instant{});
  ASSERT_TRUE(after_reset.ok());
  EXPECT_NEAR(static_cast<double>(after_reset->hwm_bytes),
              static_cast<double>(after_reset->rss_bytes), kTolerance);
  // A spike between two reads is caught by the high-water mark at full size.
  ASSERT_TRUE(child.spike(48 * kMiB));
  auto after_spike = h->read_complete(Instant{});
  ASSERT_TRUE(after_spike.ok());
  EXPECT_NEAR(static_cast<double>(after_spike->hwm_bytes - after_spike->rss_bytes), 48.0 * kMiB,
              kTolerance);
}

TEST(ProcFsReal, ExitedChildIsAnErrorThenNotSameProcess) {
  TestChild child;
  ASSERT_TRUE(child.hold(0));
  ProcFs fs;
  auto h = fs.open(child.pid());
  ASSERT_TRUE(h.ok()) << h.error().message;
  EXPECT_EQ(*h->is_same_process(), true);
  ASSERT_TRUE(child.exit_with(3));
  const int status = child.reap();
  ASSERT_TRUE(WIFEXITED(status));
  auto r = h->read_periodic(Instant{});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "process " + std::to_string(child.pid()) + " has exited");
  auto c = h->read_complete(Instant{});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("has exited"), std::string::npos) << c.error().message;
  EXPECT_EQ(*h->is_same_process(), false);
  EXPECT_EQ(*fs.is_alive(h->id()), false);
  EXPECT_FALSE(h->reset_hwm().ok());
}

TEST(ProcFsReal, ZombieIsNotTheSameLiveProcess) {
  TestChild child;
  ASSERT_TRUE(child.hold(0));
  ProcFs fs;
  auto h = fs.open(child.pid());
  ASSERT_TRUE(h.ok());
  ASSERT_TRUE(child.exit_with(0));
  // Not reaped yet: wait until it is a zombie.
  for (int i = 0; i < 2000 && *h->is_same_process(); ++i) ::usleep(1000);
  EXPECT_EQ(*h->is_same_process(), false);
  EXPECT_FALSE(h->read_periodic(Instant{}).ok());
  EXPECT_FALSE(fs.open(child.pid()).ok());
}

TEST(ProcFsReal, SelfIdentityIsStable) {
  ProcFs fs;
  auto a = fs.identify(::getpid());
  auto b = fs.identify(::getpid());
  ASSERT_TRUE(a.ok()) << a.error().message;
  EXPECT_EQ(*a, *b);
  EXPECT_GT(a->start_time_ticks, 0u);
}

}  // namespace
}  // namespace ramguard

namespace ramguard {
namespace {

// The real smaps_rollup of this process: PSS is positive and at most RSS; its cost is printed
// (a figure for the README, not an assertion).
TEST(ProcFsReal, ReadsItsOwnPssFromSmapsRollup) {
  ProcFs fs;
  auto self = fs.open(::getpid());
  ASSERT_TRUE(self.ok()) << self.error().message;
  const auto started = std::chrono::steady_clock::now();
  auto pss = self->read_pss();
  const double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - started).count();
  ASSERT_TRUE(pss.ok()) << pss.error().message;
  EXPECT_GT(*pss, 0u);
  EXPECT_LE(*pss, self->read_periodic(Instant{})->rss_bytes + (1u << 20));
  std::printf("smaps_rollup: %.1f us for PSS %llu bytes\n", us,
              static_cast<unsigned long long>(*pss));
}

}  // namespace
}  // namespace ramguard
