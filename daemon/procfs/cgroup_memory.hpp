#pragma once
// A memory cgroup read as one target (the `cgroup` run scope): what the OOM killer acts on in a
// container, every process of the cgroup together. Files are kept open like a process's statm:
//   v1  memory.usage_in_bytes, memory.max_usage_in_bytes (exact peak, reset by writing 0),
//       memory.stat (total_rss / total_cache / total_shmem / total_swap), memory.oom_control
//   v2  memory.current, memory.peak (exact peak; reset per open file on kernels that allow a
//       write to it, else peaks are flagged as not exact), memory.stat (anon / file / shmem),
//       memory.swap.current, memory.events
// Usage counts page cache and kernel memory too: rss_bytes of a cgroup reading is the usage,
// hwm_bytes its peak; the memory that counts (counted_bytes()) is v1 total_rss + total_shmem +
// total_swap, v2 anon + shmem + memory.swap.current; file_bytes is the page cache without shmem
// (v1 total_cache - total_shmem, v2 file - shmem) and kernel_bytes the usage the split leaves.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "model/reading.hpp"
#include "procfs/cgroup.hpp"
#include "procfs/unique_fd.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

struct CgroupMemoryStat {
  std::uint64_t anon_bytes = 0;
  std::uint64_t file_bytes = 0;  // page cache without shmem
  std::uint64_t shmem_bytes = 0;
  std::uint64_t swap_bytes = 0;  // v1 with swap accounting; v2 reads memory.swap.current
};

// memory.stat text: v1 prefers the hierarchical total_* lines; v2 reads anon, file and shmem.
Result<CgroupMemoryStat> parse_cgroup_memory_stat(std::string_view text, bool v2);

// The directory of a memory cgroup: `given` as a directory that holds memory.usage_in_bytes
// or memory.current, else a cgroup path as /proc/PID/cgroup writes it, looked up under
// cgroup_root (ROOT/memory/PATH for v1, ROOT/PATH or ROOT/unified/PATH for v2).
Result<std::filesystem::path> find_memory_cgroup_dir(const std::filesystem::path& cgroup_root,
                                                     const std::string& given);
// The memory cgroup of a process (its /proc/PID/cgroup line) under cgroup_root.
Result<std::filesystem::path> process_memory_cgroup_dir(const std::filesystem::path& proc_root,
                                                        pid_t pid,
                                                        const std::filesystem::path& cgroup_root);

// What a cgroup knew at a moment: its peak usage since the last reset and its own limit.
struct CgroupPeak {
  std::uint64_t peak_usage_bytes = 0;
  std::uint64_t limit_bytes = 0;  // 0: no limit set on this cgroup
};

// DIR's peak and own limit read by path, once: what the exit watcher takes the moment a
// process's exit is seen, before its cgroup can be removed (an open file of a removed cgroup
// reads ENODEV, so only an early read survives a quick rmdir).
Result<CgroupPeak> read_cgroup_peak(const std::filesystem::path& dir);

class CgroupMemory;
// The memory cgroup `given` names (find_memory_cgroup_dir), or PID's own when it is empty,
// opened: one call for runs, watches and admission.
Result<CgroupMemory> open_memory_cgroup(const std::filesystem::path& proc_root,
                                        const std::filesystem::path& cgroup_root, pid_t pid,
                                        const std::string& given = {});

class CgroupMemory {
 public:
  // Errors name the directory and what is missing: not there, not a memory cgroup, unreadable.
  static Result<CgroupMemory> open(const std::filesystem::path& dir);

  // Usage and the stat split (two preads); source kPeriodic.
  Result<MemoryReading> read_periodic(const Instant& at);
  // As read_periodic plus the peak since the last reset (hwm_bytes) and swap; source kMark.
  Result<MemoryReading> read_complete(const Instant& at);
  // v1: writes 0 to memory.max_usage_in_bytes. v2: writes to the kept-open memory.peak, which
  // resets the peak seen through that file (Linux 6.12+); an error where it cannot.
  Status reset_peak();
  Result<std::uint64_t> oom_kills();
  // The peak usage since the last reset (v1 memory.max_usage_in_bytes, v2 memory.peak): at an
  // OOM kill, what the cgroup reached; an error where there is no peak file.
  Result<std::uint64_t> peak_usage_bytes();
  // This cgroup's own limit (v1 memory.limit_in_bytes, v2 memory.max); 0 when none is set
  // ("max", or v1's page-rounded LONG_MAX). Its parents' limits are not walked.
  Result<std::uint64_t> own_limit_bytes() const;

  const std::filesystem::path& dir() const { return dir_; }
  bool v2() const { return v2_; }
  bool has_peak() const { return peak_fd_.valid(); }

 private:
  CgroupMemory() = default;
  Error read_error(const char* file, int err) const;

  std::filesystem::path dir_;
  bool v2_ = false;
  UniqueFd usage_fd_;
  UniqueFd stat_fd_;
  UniqueFd peak_fd_;  // invalid: no peak file (v2 before 5.19): peaks are sampled
  UniqueFd swap_fd_;  // v2 memory.swap.current, when present
  UniqueFd oom_fd_;   // memory.oom_control (v1) / memory.events (v2): read at every reading
  std::vector<char> oom_buf_;
  std::vector<char> stat_buf_;
};

}  // namespace ramguard
