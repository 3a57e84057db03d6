// PssReader against a real child: the sum is read on the worker thread and handed back on the
// loop's io_context; a process that is gone or whose PID names another process is skipped.
#include "sampling/pss_reader.hpp"

#include <gtest/gtest.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <thread>

#include "unit/procfs/test_child.hpp"

namespace ramguard {
namespace {

using testing::TestChild;

TEST(PssReader, SumsLiveProcessesOffTheCallersThread) {
  TestChild child;
  ASSERT_TRUE(child.hold(64 * TestChild::kMiB));
  ProcFs fs;
  auto handle = fs.open(child.pid());
  ASSERT_TRUE(handle.ok()) << handle.error().message;
  TargetId reused = handle->id();
  reused.start_time_ticks += 1;  // the same PID, another process: not summed
  const TargetId gone{.pid = 0x3ffffff0, .start_time_ticks = 1};

  asio::io_context io;
  auto work = asio::make_work_guard(io);
  PssReader reader(io.get_executor());
  PssSum sum;
  std::thread::id resumed_on;
  bool done = false;
  reader.sum({handle->id(), reused, gone}, [&](const PssSum& s) {
    sum = s;
    resumed_on = std::this_thread::get_id();
    done = true;
  });
  while (!done) io.run_one();

  EXPECT_EQ(resumed_on, std::this_thread::get_id());  // back on the io_context's thread
  EXPECT_EQ(sum.processes_read, 1u);
  EXPECT_GE(sum.pss_bytes, 60 * TestChild::kMiB);
  EXPECT_LE(sum.pss_bytes, 80 * TestChild::kMiB);
  EXPECT_GT(sum.seconds, 0);
}

// Its owner (the run registry) may go while a sum is on the worker: what comes back then is
// dropped, never called.
TEST(PssReader, NothingComesBackAfterTheReaderIsGone) {
  TestChild child;
  ASSERT_TRUE(child.hold(0));
  ProcFs fs;
  auto handle = fs.open(child.pid());
  ASSERT_TRUE(handle.ok()) << handle.error().message;
  asio::io_context io;
  bool called = false;
  {
    PssReader reader(io.get_executor());
    reader.sum({handle->id()}, [&](const PssSum&) { called = true; });
  }  // joins the worker: the sum is read or dropped, and anything it posted waits on `io`
  io.run();
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace ramguard
