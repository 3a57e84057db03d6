// CommitBatch: the requests of one loop turn share one write, every waiter resumes only after
// the write that covers it, and a wait after a write gets a write of its own.
#include "control/commit_batch.hpp"

#include <gtest/gtest.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <utility>
#include <vector>

namespace ramguard::control {
namespace {

TEST(CommitBatch, WaitersOfOneTurnShareOneWriteAndResumeAfterIt) {
  asio::io_context io;
  int writes = 0;
  std::vector<int> writes_seen;
  CommitBatch batch(io.get_executor(), [&] {
    ++writes;
    return true;
  });
  for (int i = 0; i < 5; ++i) {
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
          co_await batch.wait();
          writes_seen.push_back(writes);
        },
        asio::detached);
  }
  io.run();
  EXPECT_EQ(writes, 1);
  EXPECT_EQ(batch.writes(), 1u);
  EXPECT_EQ(writes_seen, std::vector<int>(5, 1));
}

TEST(CommitBatch, AWaitAfterAWriteGetsItsOwnWrite) {
  asio::io_context io;
  int writes = 0;
  CommitBatch batch(io.get_executor(), [&] {
    ++writes;
    return true;
  });
  std::vector<int> seen;
  asio::co_spawn(
      io,
      [&]() -> asio::awaitable<void> {
        co_await batch.wait();
        seen.push_back(writes);
        co_await batch.wait();  // what it changed since must be written too
        seen.push_back(writes);
      },
      asio::detached);
  io.run();
  EXPECT_EQ(seen, (std::vector<int>{1, 2}));
}

TEST(CommitBatch, NoWaitNoWrite) {
  asio::io_context io;
  int writes = 0;
  CommitBatch batch(io.get_executor(), [&] {
    ++writes;
    return true;
  });
  io.run();
  EXPECT_EQ(writes, 0);
}

TEST(CommitBatch, AFailedWriteIsReportedToEveryWaiterOfItsBatch) {
  asio::io_context io;
  bool fail = true;
  CommitBatch batch(io.get_executor(), [&] { return !std::exchange(fail, false); });
  std::vector<bool> results;
  for (int i = 0; i < 3; ++i) {
    asio::co_spawn(
        io, [&]() -> asio::awaitable<void> { results.push_back(co_await batch.wait()); },
        asio::detached);
  }
  io.run();
  io.restart();
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { results.push_back(co_await batch.wait()); },
      asio::detached);
  io.run();
  EXPECT_EQ(results, (std::vector<bool>{false, false, false, true}));
}

TEST(CommitBatch, ScheduleWritesWithNobodyWaiting) {
  asio::io_context io;
  int writes = 0;
  CommitBatch batch(io.get_executor(), [&] {
    ++writes;
    return true;
  });
  batch.schedule();
  batch.schedule();  // the same turn: one write
  io.run();
  EXPECT_EQ(writes, 1);
}

}  // namespace
}  // namespace ramguard::control
