// The ledger's reading thread: its jobs read on a connection of their own what the writer
// committed, in the order posted, while the writer goes on writing on its thread.
#include "store/store_reader.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "store_fixtures.hpp"

namespace ramguard {
namespace {

using testing::full_ledger;
using testing::mark;
using testing::TempDir;
using testing::test_vfs;

std::unique_ptr<Store> open_writer(const std::filesystem::path& dir) {
  StoreOptions options = test_vfs();
  options.sync_every_commit = false;
  auto store = Store::open(dir, options);
  EXPECT_TRUE(store) << store.error().message;
  return store ? std::move(*store) : nullptr;
}

// The marks the reading thread finds for `run_id`, or -1 when it could not read the run.
std::future<long> marks_read(StoreReader& reader, const std::string& run_id) {
  auto promise = std::make_shared<std::promise<long>>();
  auto future = promise->get_future();
  reader.post([promise, run_id](LedgerQueries& ledger) {
    auto run = ledger.load_run(run_id);
    promise->set_value(run ? static_cast<long>(run->marks.size()) : -1);
  });
  return future;
}

TEST(StoreReader, ReadsWhatTheWriterCommittedWhileItWrites) {
  TempDir dir;
  auto writer = open_writer(dir.path());
  ASSERT_TRUE(writer);
  ASSERT_TRUE(writer->begin_run(full_ledger("r1")));  // 4 marks
  auto reader = StoreReader::start(writer->path());
  ASSERT_TRUE(reader) << reader.error().message;
  EXPECT_EQ(marks_read(**reader, "r1").get(), 4);

  // The writer commits on this thread while the reader reads on its own: each read sees a
  // committed count, never fewer than the writes committed before it was posted.
  std::vector<std::future<long>> reads;
  std::vector<long> committed_before;
  for (std::uint64_t seq = 5; seq < 205; ++seq) {
    ASSERT_TRUE(writer->append_mark("r1", mark(seq, MarkKind::kPhaseBegin, "train", 1)));
    if (seq % 20 == 0) {
      committed_before.push_back(static_cast<long>(seq));
      reads.push_back(marks_read(**reader, "r1"));
    }
  }
  long previous = 0;
  for (std::size_t i = 0; i < reads.size(); ++i) {
    const long seen = reads[i].get();
    EXPECT_GE(seen, committed_before[i]);
    EXPECT_GE(seen, previous) << "jobs run in the order posted";
    previous = seen;
  }
  EXPECT_EQ(marks_read(**reader, "r1").get(), 204);
  EXPECT_EQ(marks_read(**reader, "unknown").get(), -1);
}

TEST(StoreReader, ItsJobsGetReadsOnly) {
  // A job gets the reads alone: nothing on the reading thread can write the ledger.
  static_assert(!std::is_convertible_v<LedgerQueries&, LedgerWriter&>);
  TempDir dir;
  auto writer = open_writer(dir.path());
  ASSERT_TRUE(writer);
  ASSERT_TRUE(writer->begin_run(full_ledger("r2")));
  auto reader = StoreReader::start(writer->path());
  ASSERT_TRUE(reader) << reader.error().message;
  std::promise<std::size_t> listed;
  (*reader)->post([&](LedgerQueries& ledger) {
    auto runs = ledger.list_runs(10);
    listed.set_value(runs ? runs->size() : 0);
  });
  EXPECT_EQ(listed.get_future().get(), 1u);
}

TEST(StoreReader, StoppingDropsTheJobsNotStarted) {
  TempDir dir;
  auto writer = open_writer(dir.path());
  ASSERT_TRUE(writer);
  auto reader = StoreReader::start(writer->path());
  ASSERT_TRUE(reader) << reader.error().message;
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> started;
  int ran = 0;
  (*reader)->post([&](LedgerQueries&) {
    started.set_value();
    released.wait();
    ++ran;
  });
  started.get_future().wait();
  auto dropped = std::make_shared<int>(0);
  (*reader)->post([dropped](LedgerQueries&) { ++*dropped; });
  EXPECT_EQ((*reader)->jobs_waiting(), 1u);
  std::thread releaser([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // after the stop began
    release.set_value();
  });
  reader->reset();  // waits for the job in progress, drops the other
  releaser.join();
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(*dropped, 0);
  EXPECT_EQ(dropped.use_count(), 1) << "the dropped job is destroyed";
}

}  // namespace
}  // namespace ramguard
