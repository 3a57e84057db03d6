// ExitWatcher against real processes: children (exit code, SIGKILL), a non-child, OOM evidence
// from a fake cgroup tree, cancel, and errors. Latency is measured with a generous bound.
#include "sampling/exit_watcher.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <optional>

#include "procfs/proc_fs.hpp"
#include "unit/procfs/fake_proc.hpp"
#include "unit/procfs/test_child.hpp"

namespace ramguard {
namespace {

using testing::TestChild;
using Steady = std::chrono::steady_clock;

// Runs the loop until `done` or the timeout; returns whether done.
template <typename Pred>
bool run_until(asio::io_context& io, Pred done, std::chrono::milliseconds timeout) {
  const auto deadline = Steady::now() + timeout;
  while (!done() && Steady::now() < deadline) {
    io.restart();
    io.run_for(std::chrono::milliseconds(5));
  }
  return done();
}

TEST(ExitWatcher, ChildExitCodeWithinASecond) {
  asio::io_context io;
  ExitWatcher watcher(io);
  TestChild child;
  ASSERT_TRUE(child.hold(0));
  std::optional<ExitInfo> got;
  Steady::time_point fired;
  ASSERT_TRUE(watcher
                  .watch(child.pid(),
                         [&](ExitInfo info) {
                           fired = Steady::now();
                           got = std::move(info);
                         })
                  .ok());
  EXPECT_TRUE(watcher.watching(child.pid()));
  const auto sent = Steady::now();
  ASSERT_TRUE(child.exit_with(3));
  ASSERT_TRUE(run_until(
      io, [&] { return got.has_value(); }, std::chrono::seconds(5)));
  const double latency = std::chrono::duration<double>(fired - sent).count();
  EXPECT_LT(latency, 1.0);
  RecordProperty("exit_latency_us", static_cast<int>(latency * 1e6));
  EXPECT_TRUE(got->status_known);
  EXPECT_EQ(got->exit_code, 3);
  EXPECT_EQ(got->signal, 0);
  EXPECT_FALSE(got->oom_killed);
  EXPECT_NE(got->detail.find("exited with code 3"), std::string::npos) << got->detail;
  EXPECT_FALSE(watcher.watching(child.pid()));
  // The watcher peeks, never reaps: the owner still gets the status.
  const int status = child.reap();
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
}

TEST(ExitWatcher, ChildKilledBySigkill) {
  asio::io_context io;
  ExitWatcher watcher(io);
  TestChild child;
  ASSERT_TRUE(child.hold(16 * TestChild::kMiB));
  std::optional<ExitInfo> got;
  ASSERT_TRUE(watcher.watch(child.pid(), [&](ExitInfo info) { got = std::move(info); }).ok());
  const auto sent = Steady::now();
  ASSERT_EQ(::kill(child.pid(), SIGKILL), 0);
  ASSERT_TRUE(run_until(
      io, [&] { return got.has_value(); }, std::chrono::seconds(5)));
  EXPECT_LT(std::chrono::duration<double>(Steady::now() - sent).count(), 1.0);
  EXPECT_TRUE(got->status_known);
  EXPECT_EQ(got->signal, SIGKILL);
  EXPECT_FALSE(got->core_dumped);
  EXPECT_NE(got->detail.find("SIGKILL"), std::string::npos) << got->detail;
  child.reap();
}

TEST(ExitWatcher, NonChildStatusIsUnknown) {
  // Double fork: the grandchild is not ours; it exits when we close its pipe.
  int gate[2];
  int report[2];
  ASSERT_EQ(::pipe(gate), 0);
  ASSERT_EQ(::pipe(report), 0);
  const pid_t middle = ::fork();
  ASSERT_GE(middle, 0);
  if (middle == 0) {
    const pid_t grandchild = ::fork();
    if (grandchild == 0) {
      ::close(gate[1]);
      char c;
      while (::read(gate[0], &c, 1) > 0) {
      }
      ::_exit(0);
    }
    (void)!::write(report[1], &grandchild, sizeof grandchild);
    ::_exit(0);
  }
  ::close(gate[0]);
  pid_t grandchild = 0;
  ASSERT_EQ(::read(report[0], &grandchild, sizeof grandchild),
            static_cast<ssize_t>(sizeof grandchild));
  ::waitpid(middle, nullptr, 0);

  asio::io_context io;
  ExitWatcher watcher(io);
  std::optional<ExitInfo> got;
  ASSERT_TRUE(watcher.watch(grandchild, [&](ExitInfo info) { got = std::move(info); }).ok());
  io.run_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(got.has_value());  // still alive
  const auto sent = Steady::now();
  ::close(gate[1]);
  ASSERT_TRUE(run_until(
      io, [&] { return got.has_value(); }, std::chrono::seconds(5)));
  EXPECT_LT(std::chrono::duration<double>(Steady::now() - sent).count(), 1.0);
  EXPECT_FALSE(got->status_known);
  EXPECT_NE(got->detail.find("not a child"), std::string::npos) << got->detail;
  ::close(report[0]);
  ::close(report[1]);
}

TEST(ExitWatcher, OomKillFromFakeCgroupCounter) {
  TestChild child;
  ASSERT_TRUE(child.hold(0));
  testing::FakeProcTree proc;
  testing::FakeProcTree cgroups;
  proc.add(child.pid(), testing::FakeProcess{});
  proc.write(child.pid(), "cgroup", "4:memory:/job\n");
  const auto counter = cgroups.root() / "memory/job/memory.oom_control";
  std::filesystem::create_directories(counter.parent_path());
  std::ofstream(counter) << "oom_kill_disable 0\nunder_oom 0\noom_kill 4\n";

  asio::io_context io;
  ExitWatcher watcher(io, proc.root(), cgroups.root());
  std::optional<ExitInfo> got;
  ASSERT_TRUE(watcher.watch(child.pid(), [&](ExitInfo info) { got = std::move(info); }).ok());
  std::ofstream(counter, std::ios::trunc) << "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n";
  ASSERT_EQ(::kill(child.pid(), SIGKILL), 0);
  ASSERT_TRUE(run_until(
      io, [&] { return got.has_value(); }, std::chrono::seconds(5)));
  EXPECT_TRUE(got->oom_killed);
  EXPECT_NE(got->detail.find("oom_kill 4 -> 5"), std::string::npos) << got->detail;
  child.reap();
}

TEST(ExitWatcher, CancelSuppressesTheCallback) {
  asio::io_context io;
  ExitWatcher watcher(io);
  TestChild child;
  ASSERT_TRUE(child.hold(0));
  bool called = false;
  ASSERT_TRUE(watcher.watch(child.pid(), [&](ExitInfo) { called = true; }).ok());
  watcher.cancel(child.pid());
  EXPECT_EQ(watcher.size(), 0u);
  ::kill(child.pid(), SIGKILL);
  io.run_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(called);
  child.reap();
}

TEST(ExitWatcher, DestroyedWatcherWithPendingWaitIsSafe) {
  asio::io_context io;
  TestChild child;
  ASSERT_TRUE(child.hold(0));
  bool called = false;
  {
    ExitWatcher watcher(io);
    ASSERT_TRUE(watcher.watch(child.pid(), [&](ExitInfo) { called = true; }).ok());
  }
  ::kill(child.pid(), SIGKILL);
  io.run_for(std::chrono::milliseconds(100));
  EXPECT_FALSE(called);
  child.reap();
}

TEST(ExitWatcher, ErrorsNameTheProblem) {
  asio::io_context io;
  ExitWatcher watcher(io);
  pid_t gone;
  {
    TestChild child;
    ASSERT_TRUE(child.hold(0));
    gone = child.pid();
    ASSERT_TRUE(watcher.watch(gone, [](ExitInfo) {}).ok());
    auto twice = watcher.watch(gone, [](ExitInfo) {});
    ASSERT_FALSE(twice.ok());
    EXPECT_NE(twice.error().message.find("already watched"), std::string::npos);
    watcher.cancel(gone);

    auto id = ProcFs().identify(gone);
    ASSERT_TRUE(id.ok());
    auto wrong = watcher.watch(TargetId{gone, id->start_time_ticks + 1}, [](ExitInfo) {});
    ASSERT_FALSE(wrong.ok());
    EXPECT_NE(wrong.error().message.find("another process"), std::string::npos);
    EXPECT_FALSE(watcher.watching(gone));
    EXPECT_TRUE(watcher.watch(*id, [](ExitInfo) {}).ok());
    watcher.cancel(gone);
  }  // killed and reaped
  auto s = watcher.watch(gone, [](ExitInfo) {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("no such process"), std::string::npos) << s.error().message;
  EXPECT_FALSE(watcher.watch(0, [](ExitInfo) {}).ok());
}

}  // namespace
}  // namespace ramguard
