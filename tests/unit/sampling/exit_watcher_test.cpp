// ExitWatcher against real processes: children (exit code, SIGKILL), non-children (exit code,
// SIGKILL, SIGTERM through the proc connector; unknown without it), OOM evidence from a fake
// cgroup tree, several owners of one PID, cancel, and errors. Latency has a generous bound.
#include "sampling/exit_watcher.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <vector>

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

// A process that is not ours (double fork: its parent is gone, so waitid cannot tell its
// status). It waits on a pipe; closing the gate lets it exit with `code`.
class Grandchild {
 public:
  explicit Grandchild(int code) {
    int gate[2];
    int report[2];
    if (::pipe(gate) != 0) return;
    if (::pipe(report) != 0) return;
    const pid_t middle = ::fork();
    if (middle == 0) {
      const pid_t grandchild = ::fork();
      if (grandchild == 0) {
        // Only the read end stays open here, so the gate closes when the test closes it.
        for (int fd = 3; fd < 1024; ++fd) {
          if (fd != gate[0]) ::close(fd);
        }
        char c;
        while (::read(gate[0], &c, 1) > 0) {
        }
        ::_exit(code);
      }
      (void)!::write(report[1], &grandchild, sizeof grandchild);
      ::_exit(0);
    }
    ::close(gate[0]);
    ::close(report[1]);
    gate_ = gate[1];
    if (::read(report[0], &pid_, sizeof pid_) != static_cast<ssize_t>(sizeof pid_)) pid_ = 0;
    ::close(report[0]);
    ::waitpid(middle, nullptr, 0);
  }
  ~Grandchild() { release(); }
  Grandchild(const Grandchild&) = delete;
  Grandchild& operator=(const Grandchild&) = delete;
  pid_t pid() const { return pid_; }
  void release() {
    if (gate_ >= 0) ::close(gate_);
    gate_ = -1;
  }

 private:
  pid_t pid_ = 0;
  int gate_ = -1;
};

// Watches a grandchild, ends it with `end`, and returns what the watcher reported.
template <typename End>
std::optional<ExitInfo> watch_non_child(ExitWatcher& watcher, asio::io_context& io, int code,
                                        End end) {
  Grandchild grandchild(code);
  EXPECT_GT(grandchild.pid(), 0);
  if (grandchild.pid() <= 0) return std::nullopt;
  std::optional<ExitInfo> got;
  EXPECT_TRUE(watcher.watch(grandchild.pid(), [&](ExitInfo info) { got = std::move(info); }).ok());
  io.run_for(std::chrono::milliseconds(20));
  EXPECT_FALSE(got.has_value());  // still alive
  const auto sent = Steady::now();
  end(grandchild);
  EXPECT_TRUE(run_until(
      io, [&] { return got.has_value(); }, std::chrono::seconds(5)));
  EXPECT_LT(std::chrono::duration<double>(Steady::now() - sent).count(), 1.0);
  EXPECT_FALSE(watcher.watching(grandchild.pid()));
  return got;
}

// The proc connector needs CAP_NET_ADMIN: as root it must work (the tests here run as root);
// otherwise the watcher must say why and leave the status unknown.
bool expect_connector(const ExitWatcher& watcher) {
  if (::geteuid() == 0) {
    EXPECT_TRUE(watcher.knows_non_child_status()) << watcher.non_child_status_problem();
  } else {
    EXPECT_FALSE(watcher.knows_non_child_status());
    EXPECT_NE(watcher.non_child_status_problem().find("CAP_NET_ADMIN"), std::string::npos)
        << watcher.non_child_status_problem();
  }
  return watcher.knows_non_child_status();
}

TEST(ExitWatcher, NonChildExitCodeFromTheProcConnector) {
  asio::io_context io;
  ExitWatcher watcher(io);
  const bool connector = expect_connector(watcher);
  auto got = watch_non_child(watcher, io, 3, [](Grandchild& g) { g.release(); });
  ASSERT_TRUE(got.has_value());
  if (!connector) {
    EXPECT_FALSE(got->status_known);
    EXPECT_NE(got->detail.find("not a child"), std::string::npos) << got->detail;
    return;
  }
  EXPECT_TRUE(got->status_known);
  EXPECT_EQ(got->exit_code, 3);
  EXPECT_EQ(got->signal, 0);
  EXPECT_NE(got->detail.find("exited with code 3"), std::string::npos) << got->detail;
}

TEST(ExitWatcher, NonChildSignalsFromTheProcConnector) {
  asio::io_context io;
  ExitWatcher watcher(io);
  const bool connector = expect_connector(watcher);
  for (const int sig : {SIGKILL, SIGTERM}) {
    auto got = watch_non_child(watcher, io, 0,
                               [sig](Grandchild& g) { ASSERT_EQ(::kill(g.pid(), sig), 0); });
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->status_known, connector);
    if (!connector) continue;
    EXPECT_EQ(got->signal, sig);
    EXPECT_EQ(got->exit_code, 0);
    EXPECT_FALSE(got->core_dumped);
    EXPECT_NE(got->detail.find(sig == SIGKILL ? "SIGKILL" : "SIGTERM"), std::string::npos)
        << got->detail;
  }
  EXPECT_EQ(watcher.size(), 0u);
}

TEST(ExitWatcher, NonChildStatusIsUnknownWithoutTheConnector) {
  asio::io_context io;
  ExitWatcher watcher(io, ExitWatcherOptions{.proc_connector = false});
  EXPECT_FALSE(watcher.knows_non_child_status());
  EXPECT_NE(watcher.non_child_status_problem().find("switched off"), std::string::npos);
  auto got = watch_non_child(watcher, io, 3, [](Grandchild& g) { g.release(); });
  ASSERT_TRUE(got.has_value());
  EXPECT_FALSE(got->status_known);
  EXPECT_NE(got->detail.find("not a child"), std::string::npos) << got->detail;
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
  auto id = watcher.watch(child.pid(), [&](ExitInfo) { called = true; });
  ASSERT_TRUE(id.ok());
  watcher.cancel(*id);
  EXPECT_EQ(watcher.size(), 0u);
  ::kill(child.pid(), SIGKILL);
  io.run_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(called);
  child.reap();
}

// All watched PIDs share one epoll set, read 64 events at a time: a hundred exits at once
// reach every owner exactly once, and a cancelled watch among them stays silent.
TEST(ExitWatcher, MoreExitsAtOnceThanOneBatchEachReachTheirOwnerOnce) {
  asio::io_context io;
  ExitWatcher watcher(io);
  constexpr int kChildren = 100;
  std::vector<std::unique_ptr<TestChild>> children;
  std::vector<int> calls(kChildren, 0);
  std::vector<ExitWatcher::WatchId> ids;
  for (int i = 0; i < kChildren; ++i) {
    children.push_back(std::make_unique<TestChild>());
    ASSERT_TRUE(children.back()->hold(0));
    auto id = watcher.watch(children.back()->pid(), [&calls, i](ExitInfo) { ++calls[i]; });
    ASSERT_TRUE(id.ok()) << id.error().message;
    ids.push_back(*id);
  }
  watcher.cancel(ids[7]);
  for (auto& child : children) ASSERT_EQ(::kill(child->pid(), SIGKILL), 0);
  ASSERT_TRUE(run_until(
      io, [&] { return watcher.size() == 0; }, std::chrono::seconds(10)));
  io.run_for(std::chrono::milliseconds(100));  // a second call would come now
  for (int i = 0; i < kChildren; ++i) EXPECT_EQ(calls[i], i == 7 ? 0 : 1) << "child " << i;
  for (auto& child : children) child->reap();
}

// The last cancel stops the wait on the epoll set (so a loop can run out of work); a watch
// made before that stopped wait has run must still hear its exit.
TEST(ExitWatcher, AWatchRightAfterTheLastCancelStillHearsTheExit) {
  asio::io_context io;
  ExitWatcher watcher(io);
  TestChild first;
  TestChild second;
  ASSERT_TRUE(first.hold(0));
  ASSERT_TRUE(second.hold(0));
  auto id = watcher.watch(first.pid(), [](ExitInfo) {});
  ASSERT_TRUE(id.ok());
  watcher.cancel(*id);
  std::optional<ExitInfo> got;
  ASSERT_TRUE(watcher.watch(second.pid(), [&](ExitInfo info) { got = std::move(info); }).ok());
  ASSERT_TRUE(second.exit_with(5));
  ASSERT_TRUE(run_until(
      io, [&] { return got.has_value(); }, std::chrono::seconds(5)));
  EXPECT_EQ(got->exit_code, 5);
  second.reap();
}

// With nothing watched, the watcher leaves the loop no work: run() returns. (The proc
// connector, when open, always has a read pending, so it is off here.)
TEST(ExitWatcher, NothingWatchedLeavesTheLoopNoWork) {
  asio::io_context io;
  ExitWatcher watcher(io, ExitWatcherOptions{.proc_connector = false});
  TestChild child;
  ASSERT_TRUE(child.hold(0));
  bool called = false;
  ASSERT_TRUE(watcher.watch(child.pid(), [&](ExitInfo) { called = true; }).ok());
  ASSERT_TRUE(child.exit_with(0));
  io.run();  // returns only once the exit is heard and no wait is left
  EXPECT_TRUE(called);
  child.reap();
}

// A run and a --watch of the same process: both hear of the exit; cancelling one (a run that
// stops sampling) leaves the other in place.
TEST(ExitWatcher, SeveralOwnersOfOnePid) {
  asio::io_context io;
  ExitWatcher watcher(io);
  TestChild child;
  ASSERT_TRUE(child.hold(0));
  int run_calls = 0;
  int watch_calls = 0;
  int cancelled_calls = 0;
  std::optional<ExitInfo> seen;
  auto run = watcher.watch(child.pid(), [&](ExitInfo info) {
    ++run_calls;
    seen = info;
  });
  auto list = watcher.watch(child.pid(), [&](ExitInfo) { ++watch_calls; });
  auto dropped = watcher.watch(child.pid(), [&](ExitInfo) { ++cancelled_calls; });
  ASSERT_TRUE(run.ok() && list.ok() && dropped.ok());
  EXPECT_NE(*run, *list);
  EXPECT_EQ(watcher.size(), 1u);  // one pidfd
  EXPECT_EQ(watcher.watches(child.pid()), 3u);
  watcher.cancel(*dropped);
  watcher.cancel(*dropped);  // spent ids are ignored
  EXPECT_EQ(watcher.watches(child.pid()), 2u);
  EXPECT_TRUE(watcher.watching(child.pid()));
  ASSERT_TRUE(child.exit_with(4));
  ASSERT_TRUE(run_until(
      io, [&] { return run_calls + watch_calls == 2; }, std::chrono::seconds(5)));
  EXPECT_EQ(run_calls, 1);
  EXPECT_EQ(watch_calls, 1);
  EXPECT_EQ(cancelled_calls, 0);
  EXPECT_EQ(seen->exit_code, 4);
  EXPECT_EQ(watcher.size(), 0u);
  watcher.cancel(*run);  // after the exit: a no-op
  child.reap();
}

TEST(ExitWatcher, CallbackCancellingASiblingSuppressesIt) {
  asio::io_context io;
  ExitWatcher watcher(io);
  TestChild child;
  ASSERT_TRUE(child.hold(0));
  ExitWatcher::WatchId second = 0;
  int calls = 0;
  auto first = watcher.watch(child.pid(), [&](ExitInfo) {
    ++calls;
    watcher.cancel(second);
  });
  auto other = watcher.watch(child.pid(), [&](ExitInfo) { calls += 100; });
  ASSERT_TRUE(first.ok() && other.ok());
  second = *other;
  ::kill(child.pid(), SIGKILL);
  ASSERT_TRUE(run_until(
      io, [&] { return calls > 0; }, std::chrono::seconds(5)));
  io.run_for(std::chrono::milliseconds(20));
  EXPECT_EQ(calls, 1);
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
    auto first = watcher.watch(gone, [](ExitInfo) {});
    ASSERT_TRUE(first.ok());
    watcher.cancel(*first);

    auto id = ProcFs().identify(gone);
    ASSERT_TRUE(id.ok());
    auto wrong = watcher.watch(TargetId{gone, id->start_time_ticks + 1}, [](ExitInfo) {});
    ASSERT_FALSE(wrong.ok());
    EXPECT_NE(wrong.error().message.find("another process"), std::string::npos);
    EXPECT_FALSE(watcher.watching(gone));
    auto right = watcher.watch(*id, [](ExitInfo) {});
    ASSERT_TRUE(right.ok());
    watcher.cancel(*right);
  }  // killed and reaped
  auto s = watcher.watch(gone, [](ExitInfo) {});
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("no such process"), std::string::npos) << s.error().message;
  EXPECT_FALSE(watcher.watch(0, [](ExitInfo) {}).ok());
}

}  // namespace
}  // namespace ramguard
