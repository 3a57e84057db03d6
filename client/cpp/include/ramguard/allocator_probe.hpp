#pragma once
// What the C allocator of this process holds, measured in-process, for the facts a round end
// or a run's end carries: the daemon then tells memory the application holds from memory the
// allocator keeps after free() (the growth floors and the release verdict use it).
//
//   glibc     mallinfo2(): allocated = uordblks + hblkhd (live), resident = arena + hblkhd
//             (from the OS), retained = fordblks (free bytes kept in the arenas)
//   jemalloc  mallctl stats after an "epoch": allocated, active, resident; retained =
//             resident - allocated (found when the process runs under jemalloc, e.g. preloaded
//             by `ramguard exec --allocator jemalloc`)
// The same mapping as the Python client's allocator_stats(). Microseconds on a small heap, a
// fraction of a millisecond with thousands of free chunks: for marks, never a sampling loop.

#include <cstdint>
#include <optional>
#include <string>

#include "ramguard.pb.h"

namespace ramguard {

struct AllocatorProbe {
  std::string allocator = "unknown";  // "glibc", "jemalloc" or "unknown"
  bool available = false;
  std::string reason;  // why not, when unavailable
  v1::AllocatorStats stats;
  double duration_seconds = 0;
};

// Never throws: an allocator it cannot read is reported unavailable with the reason.
AllocatorProbe probe_allocator();

// The statistics for MarkFacts::allocator / RunEndFacts::allocator; nullopt when unavailable.
std::optional<v1::AllocatorStats> allocator_stats();

// RSS (from /proc/self/statm) before and after malloc_trim(0) (glibc) or a purge of every
// jemalloc arena: memory the allocator returns only when asked. This really returns it.
std::optional<v1::TrimProbe> trim_allocator();

}  // namespace ramguard
