// CensusPlacer on this test's own mappings: placed on the worker, handed back on the caller's
// io_context, in order; a placer destroyed with placements queued drops them (their callbacks
// never run) instead of calling into what owned it.
#include "sampling/census_placer.hpp"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <cstring>
#include <memory>
#include <thread>

namespace ramguard {
namespace {

constexpr std::uint64_t kBytes = 4 << 20;

struct Mapped {
  Mapped() {
    address = ::mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    // Small pages: a touched quarter is exactly a quarter resident.
    if (address != MAP_FAILED) ::madvise(address, kBytes, MADV_NOHUGEPAGE);
  }
  ~Mapped() { ::munmap(address, kBytes); }
  CensusRange range(std::uint64_t bytes) const {
    return {reinterpret_cast<std::uint64_t>(address), bytes};
  }
  void* address = nullptr;
};

std::uint64_t page_size() {
  return static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
}

TEST(CensusPlacer, PlacesOnTheWorkerAndAnswersOnTheLoopInOrder) {
  Mapped mapped;
  ASSERT_NE(mapped.address, MAP_FAILED);
  std::memset(mapped.address, 1, kBytes / 4);  // a quarter resident
  asio::io_context io;
  auto work = asio::make_work_guard(io);
  CensusPlacer placer(io.get_executor(), "/proc", page_size());
  std::vector<CensusPlacement> placed;
  std::vector<std::thread::id> on;
  for (std::uint64_t bytes : {kBytes, kBytes / 4}) {
    placer.place(::getpid(), {mapped.range(bytes)}, [&](CensusPlacement p) {
      placed.push_back(std::move(p));
      on.push_back(std::this_thread::get_id());
    });
  }
  while (placed.size() < 2) io.run_one();
  for (const std::thread::id& id : on) EXPECT_EQ(id, std::this_thread::get_id());
  EXPECT_EQ(placed[0].anon_bytes, kBytes);
  EXPECT_EQ(placed[1].anon_bytes, kBytes / 4);
  for (const CensusPlacement& p : placed) {
    EXPECT_EQ(p.error, "");
    ASSERT_TRUE(p.resident_known);
    EXPECT_EQ(p.resident_bytes, kBytes / 4);
  }
}

TEST(CensusPlacer, AGonePlacerCallsNothingBack) {
  Mapped mapped;
  asio::io_context io;
  auto called = std::make_shared<int>(0);
  {
    CensusPlacer placer(io.get_executor(), "/proc", page_size());
    for (int i = 0; i < 8; ++i) {
      placer.place(::getpid(), {mapped.range(kBytes)}, [called](CensusPlacement) { ++*called; });
    }
  }  // joins the worker: what it placed is posted to the loop, which has not run yet
  io.run();
  EXPECT_EQ(*called, 0);
}

}  // namespace
}  // namespace ramguard
