#pragma once
// One observation of a process's memory (its status) or a cgroup's (memory.stat). Periodic and
// mark readings split it alike; a mark's reading also carries the kernel high-water mark.

#include <sys/types.h>

#include <cstdint>
#include <string>
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
  std::uint32_t owner_uid = 0;  // who started the run (0: root, or a watched PID)
};

enum class ReadingSource { kPeriodic, kMark };

// What reading a target costs the daemon (its own health, not the target's memory), kept per
// target by the sampler and exported beside its readings.
struct ReadTiming {
  double last_seconds = 0;  // the last reading on the event loop (a tree's walk included)
  // Readings on the loop longer than sampling.slow_read: each one held up every other
  // target's sample and every client's reply queued behind it.
  std::uint64_t slow_reads = 0;
  // The last PSS sum (tree scope, round ends) on its worker thread; 0: none yet. It walks page
  // tables (tens of ms by design) and delays no one on the loop, so it is never "slow".
  double last_pss_seconds = 0;
};

// One process of a `tree` run at a mark: who holds how much of the memory that counts.
struct ProcessShare {
  pid_t pid = 0;
  std::string command;  // /proc/PID/comm
  std::uint64_t counted_bytes = 0;
  bool root = false;  // the run's own process (the coordinator)
};

struct MemoryReading {
  Instant at;
  ReadingSource source = ReadingSource::kPeriodic;
  std::uint64_t rss_bytes = 0;
  std::uint64_t anon_bytes = 0;
  // Periodic and mark readings split alike (a process's status, a cgroup's memory.stat).
  std::uint64_t file_bytes = 0;
  std::uint64_t shmem_bytes = 0;
  std::uint64_t swap_bytes = 0;
  std::uint64_t hwm_bytes = 0;  // kernel high-water mark since the last reset; mark readings only
  // Proportional set size, shared pages split among their processes: tree-scope marks only
  // (0: not measured).
  std::uint64_t pss_bytes = 0;

  // Cgroup scope: the part of the usage that memory.stat's anon/file/shmem do not cover, the
  // cgroup's kernel memory (slab, stacks, sockets). 0 for processes (not measurable per PID).
  std::uint64_t kernel_bytes = 0;

  // The memory that counts: what the OOM killer cannot reclaim (anonymous + shmem + swap).
  // Page cache (file_bytes) and kernel memory are reported beside it and never judged.
  std::uint64_t counted_bytes() const { return anon_bytes + shmem_bytes + swap_bytes; }
  // What of rss_bytes (resident memory, or a cgroup's usage) does not count: page cache and
  // kernel memory. rss_bytes never includes swap, so this is rss - anon - shmem.
  std::uint64_t resident_uncounted_bytes() const {
    const std::uint64_t resident_counted = anon_bytes + shmem_bytes;
    return rss_bytes > resident_counted ? rss_bytes - resident_counted : 0;
  }
  // The memory that counts at the kernel's high-water mark (hwm_bytes, which like rss_bytes
  // includes what does not count): the mark less this reading's uncounted part, never below
  // this reading's counted bytes. Exact while the page cache is steady (a process's mapped
  // libraries); low by the cache added since the peak otherwise, never high by cache.
  std::uint64_t counted_peak_bytes() const {
    const std::uint64_t uncounted = resident_uncounted_bytes();
    const std::uint64_t from_hwm = hwm_bytes > uncounted ? hwm_bytes - uncounted : 0;
    return from_hwm > counted_bytes() ? from_hwm : counted_bytes();
  }
};

}  // namespace ramguard
