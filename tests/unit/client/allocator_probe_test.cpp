// libramguard's in-process allocator probe on this process's real glibc malloc: live bytes
// follow malloc and free, the free memory glibc keeps between live blocks shows as retained,
// and the trim probe returns it. no_sanitize: a sanitizer replaces malloc, and these tests
// measure glibc's own heap.
#include "ramguard/allocator_probe.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace ramguard {
namespace {

constexpr std::uint64_t kMiB = 1ULL << 20;
constexpr std::size_t kBlockBytes = 64 * 1024;  // below glibc's mmap threshold: heap chunks
constexpr std::size_t kBlocks = 1024;           // 64 MiB

TEST(AllocatorProbe, LiveBytesFollowMallocAndFreeAndGlibcKeepsTheFreedChunks) {
  const AllocatorProbe before = probe_allocator();
  ASSERT_TRUE(before.available) << before.reason;
  EXPECT_EQ(before.allocator, "glibc");
  EXPECT_EQ(before.stats.allocator(), "glibc");
  EXPECT_LT(before.duration_seconds, 1.0);

  // Each block is followed by a small one that stays: freed blocks cannot merge with each
  // other or with the heap's top, so glibc keeps them (the holes between long-lived objects).
  std::vector<void*> blocks;
  std::vector<void*> pins;
  for (std::size_t i = 0; i < kBlocks; ++i) {
    void* p = std::malloc(kBlockBytes);
    ASSERT_NE(p, nullptr);
    std::memset(p, 1, kBlockBytes);  // resident, not just reserved
    blocks.push_back(p);
    pins.push_back(std::malloc(64));
  }
  const AllocatorProbe full = probe_allocator();
  EXPECT_GE(full.stats.allocated_bytes(), before.stats.allocated_bytes() + 60 * kMiB);
  EXPECT_GE(full.stats.resident_bytes(), full.stats.allocated_bytes());

  for (void* p : blocks) std::free(p);
  const AllocatorProbe freed = probe_allocator();
  // The probe's cost, for the README (a figure, not an assertion): small heap, then 1024 chunks.
  std::printf("probe: %.1f us on a small heap, %.1f us with %zu free chunks\n",
              before.duration_seconds * 1e6, freed.duration_seconds * 1e6, kBlocks);
  EXPECT_LT(freed.stats.allocated_bytes(), full.stats.allocated_bytes() - 60 * kMiB);
  EXPECT_GE(freed.stats.retained_bytes(), 60 * kMiB) << "glibc keeps the freed chunks";

  const auto trim = trim_allocator();
  ASSERT_TRUE(trim.has_value());
  EXPECT_GE(trim->rss_before_bytes(), trim->rss_after_bytes() + 30 * kMiB)
      << "malloc_trim(0) returns the free chunks' pages";
  for (void* p : pins) std::free(p);

  const auto stats = allocator_stats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_EQ(stats->allocator(), "glibc");
}

}  // namespace
}  // namespace ramguard
