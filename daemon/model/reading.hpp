#pragma once
// One observation of a process's memory. Periodic readings come from statm (RSS and the
// anon / file+shmem split only); mark-time readings come from status and are complete.

#include <sys/types.h>

#include <cstdint>
#include <string_view>

#include "common/clock.hpp"

namespace ramguard {

// A process is its PID plus its start time (clock ticks after boot, field 22 of stat):
// a reused PID is a different target.
struct TargetId {
  pid_t pid = 0;
  std::uint64_t start_time_ticks = 0;
  friend bool operator==(const TargetId&, const TargetId&) = default;
};

// Whose series a reading feeds: a run's job and run id, or for a watched PID without a run
// "pid-<PID>" as both. Two runs of the same job are two targets.
struct TargetRef {
  std::string_view job;
  std::string_view run_id;
};

enum class ReadingSource { kPeriodic, kMark };

struct MemoryReading {
  Instant at;
  ReadingSource source = ReadingSource::kPeriodic;
  std::uint64_t rss_bytes = 0;
  std::uint64_t anon_bytes = 0;
  // Periodic readings cannot tell file from shmem: statm's "shared" is both, kept in file_bytes.
  std::uint64_t file_bytes = 0;
  std::uint64_t shmem_bytes = 0;
  std::uint64_t swap_bytes = 0;  // mark readings only
  std::uint64_t hwm_bytes = 0;   // kernel high-water mark since the last reset; mark readings only
  // Proportional set size, shared pages split among their processes: tree-scope marks only
  // (0: not measured).
  std::uint64_t pss_bytes = 0;

  // The memory that counts: what the OOM killer cannot reclaim (anonymous + shmem + swap).
  // Page cache (file_bytes) is reported beside it and never judged.
  std::uint64_t counted_bytes() const { return anon_bytes + shmem_bytes + swap_bytes; }
};

}  // namespace ramguard
