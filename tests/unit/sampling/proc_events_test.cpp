// ProcEvents against the real kernel: only kept PIDs are recorded, with their wait status, and
// a thread's exit is not taken for its process's. Needs CAP_NET_ADMIN (the tests run as root);
// without it, open() must say so.
#include "sampling/proc_events.hpp"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <optional>
#include <thread>
#include <vector>

namespace ramguard {
namespace {

using Steady = std::chrono::steady_clock;

// A child that waits for one byte per step: step 1 starts and joins a thread, then reports
// once that thread is gone from /proc/self/task; closing the pipe makes it exit with `code`.
class SteppedChild {
 public:
  explicit SteppedChild(int code) {
    int to[2];
    int from[2];
    if (::pipe(to) != 0 || ::pipe(from) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      // Only our own ends stay open, so no other child keeps this one's pipe alive.
      for (int fd = 3; fd < 1024; ++fd) {
        if (fd != to[0] && fd != from[1]) ::close(fd);
      }
      char c;
      while (::read(to[0], &c, 1) == 1) {
        std::thread([] {}).join();
        while (std::distance(std::filesystem::directory_iterator("/proc/self/task"),
                             std::filesystem::directory_iterator{}) > 1) {
          std::this_thread::yield();
        }
        (void)!::write(from[1], "t", 1);
      }
      ::_exit(code);
    }
    ::close(to[0]);
    ::close(from[1]);
    to_ = to[1];
    from_ = from[0];
  }
  ~SteppedChild() {
    finish();
    if (from_ >= 0) ::close(from_);
    if (pid_ > 0) ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  bool thread_come_and_gone() {
    char c = 's';
    return ::write(to_, &c, 1) == 1 && ::read(from_, &c, 1) == 1;
  }
  void finish() {
    if (to_ >= 0) ::close(to_);
    to_ = -1;
  }

 private:
  pid_t pid_ = -1;
  int to_ = -1;
  int from_ = -1;
};

std::optional<int> status_within(ProcEvents& events, asio::io_context& io, pid_t pid) {
  const auto deadline = Steady::now() + std::chrono::seconds(5);
  while (Steady::now() < deadline) {
    if (auto s = events.status(pid)) return s;
    io.restart();
    io.run_for(std::chrono::milliseconds(5));
  }
  return std::nullopt;
}

TEST(ProcEvents, OpensAsRootOrSaysWhyNot) {
  asio::io_context io;
  auto opened = ProcEvents::open(io);
  if (::geteuid() == 0) {
    ASSERT_TRUE(opened.ok()) << opened.error().message;
    EXPECT_EQ((*opened)->kept(), 0u);
  } else {
    ASSERT_FALSE(opened.ok());
    EXPECT_NE(opened.error().message.find("CAP_NET_ADMIN"), std::string::npos)
        << opened.error().message;
  }
}

TEST(ProcEvents, RecordsKeptPidsOnlyAndIgnoresThreadExits) {
  asio::io_context io;
  auto opened = ProcEvents::open(io);
  ASSERT_TRUE(opened.ok()) << opened.error().message;  // the tests run as root
  ProcEvents& events = **opened;
  std::vector<std::pair<pid_t, int>> notified;
  events.set_on_status([&](pid_t pid, int status) { notified.emplace_back(pid, status); });

  SteppedChild kept(7);
  SteppedChild other(9);
  ASSERT_GT(kept.pid(), 0);
  events.keep(kept.pid());
  EXPECT_EQ(events.kept(), 1u);
  ASSERT_TRUE(kept.thread_come_and_gone());
  // A later exit (of `other`, kept now) marks the point by which the thread's event was read.
  events.keep(other.pid());
  other.finish();
  const auto other_status = status_within(events, io, other.pid());
  ASSERT_TRUE(other_status.has_value());
  EXPECT_EQ(WEXITSTATUS(*other_status), 9);
  EXPECT_FALSE(events.status(kept.pid()).has_value()) << "a thread's exit was taken";

  kept.finish();
  const auto kept_status = status_within(events, io, kept.pid());
  ASSERT_TRUE(kept_status.has_value());
  EXPECT_TRUE(WIFEXITED(*kept_status));
  EXPECT_EQ(WEXITSTATUS(*kept_status), 7);
  ASSERT_EQ(notified.size(), 2u);
  EXPECT_EQ(notified[1].first, kept.pid());

  events.forget(kept.pid());
  events.forget(other.pid());
  EXPECT_EQ(events.kept(), 0u);
  EXPECT_FALSE(events.status(kept.pid()).has_value());
}

TEST(ProcEvents, UnkeptExitsAreNotRecorded) {
  asio::io_context io;
  auto opened = ProcEvents::open(io);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  ProcEvents& events = **opened;
  SteppedChild unkept(1);
  SteppedChild marker(2);
  events.keep(marker.pid());
  unkept.finish();
  ::waitpid(unkept.pid(), nullptr, 0);  // its event is queued by now
  marker.finish();
  ASSERT_TRUE(status_within(events, io, marker.pid()).has_value());
  EXPECT_FALSE(events.status(unkept.pid()).has_value());
  EXPECT_EQ(events.kept(), 1u);
}

// Fork events pass the socket's filter only while followed, and a new thread is never a fork.
TEST(ProcEvents, ForksReachTheFollowerOnlyWhileFollowed) {
  asio::io_context io;
  auto opened = ProcEvents::open(io);
  ASSERT_TRUE(opened.ok()) << opened.error().message;
  ProcEvents& events = **opened;
  std::vector<ProcFork> forks;  // the whole machine's: other processes fork too
  events.set_follower(
      {.fork = [&](const ProcFork& fork) { forks.push_back(fork); }, .exit = {}, .lost = {}});
  const auto forks_of = [&](pid_t child) {
    return std::count_if(forks.begin(), forks.end(),
                         [&](const ProcFork& f) { return f.child == child; });
  };
  const auto forked_by = [&](pid_t parent) {
    return std::count_if(forks.begin(), forks.end(),
                         [&](const ProcFork& f) { return f.parent == parent; });
  };

  events.follow_forks(true);
  SteppedChild followed(0);
  ASSERT_TRUE(followed.thread_come_and_gone());  // a thread starts in it: not a fork
  events.keep(followed.pid());
  followed.finish();
  // Its exit is queued after its fork and its thread's start: all have been read by now.
  ASSERT_TRUE(status_within(events, io, followed.pid()).has_value());
  EXPECT_EQ(forks_of(followed.pid()), 1);
  const auto it = std::find_if(forks.begin(), forks.end(),
                               [&](const ProcFork& f) { return f.child == followed.pid(); });
  ASSERT_NE(it, forks.end());
  EXPECT_EQ(it->parent, ::getpid());
  EXPECT_EQ(forked_by(followed.pid()), 0) << "a thread was taken for a process";

  events.follow_forks(false);
  SteppedChild unfollowed(0);
  events.keep(unfollowed.pid());
  unfollowed.finish();
  ASSERT_TRUE(status_within(events, io, unfollowed.pid()).has_value());
  EXPECT_EQ(forks_of(unfollowed.pid()), 0);
}

}  // namespace
}  // namespace ramguard
