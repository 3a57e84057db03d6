#pragma once
// The procfs reader. ProcFs is rooted at a directory (/proc, or a fake tree in tests) and opens
// ProcessHandles: one process (PID + start time) with its statm and status kept open, so the
// periodic read is a single pread and a reused PID can never be read by mistake.

#include <sys/types.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "model/reading.hpp"
#include "procfs/parse.hpp"
#include "procfs/unique_fd.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

// A shared-memory object a process maps (a /dev/shm file, memfd, SysV segment, shared
// anonymous mapping), identified by its inode: the same object mapped by several processes is
// one node-wide allocation of `bytes` (its allocated pages, resident or swapped).
struct SharedSegment {
  std::uint64_t dev = 0, ino = 0;
  std::uint64_t bytes = 0;
  friend bool operator<(const SharedSegment& a, const SharedSegment& b) {
    return a.dev != b.dev ? a.dev < b.dev : a.ino < b.ino;
  }
};

class ProcessHandle {
 public:
  ProcessHandle(ProcessHandle&&) noexcept = default;
  ProcessHandle& operator=(ProcessHandle&&) noexcept = default;
  ProcessHandle(const ProcessHandle&) = delete;
  ProcessHandle& operator=(const ProcessHandle&) = delete;
  ~ProcessHandle() = default;

  // The periodic reading: one pread of the kept-open status (anon, file and shmem apart, swap),
  // no allocation unless it fails; no high-water mark; source kPeriodic. (statm is cheaper but
  // cannot tell shmem from file: shared memory would count 0 times between marks and once at
  // them.)
  Result<MemoryReading> read_periodic(const Instant& at);
  // One pread of the kept-open statm: rss, anon = resident - shared, file_bytes = shared
  // (file + shmem together). The cheapest check that the process still has an address space.
  Result<MemoryReading> read_statm(const Instant& at);
  // One pread of the kept-open status: the full split, swap and high-water mark; source kMark.
  Result<MemoryReading> read_complete(const Instant& at);
  // Writes "5" to clear_refs so VmHWM restarts from the current RSS. Fails (degraded, not fatal)
  // where the kernel or permissions do not allow it.
  Status reset_hwm();
  // VmHWM at the last status read (periodic or complete; 0 after a reset until the next read):
  // the process's last known peak, which a sudden death (an OOM kill) leaves as its peak.
  std::uint64_t last_hwm_bytes() const { return last_hwm_bytes_; }
  // PSS from smaps_rollup (the kernel walks every mapping: tens of microseconds to milliseconds
  // for a large process), for marks of the tree scope only, never the periodic path.
  Result<std::uint64_t> read_pss() const;
  // The shared-memory objects this process maps (maps, then each object's size through
  // map_files, which needs CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE): one entry per object. An
  // object whose size cannot be read is left out (the caller keeps RssShmem for it). Costs a
  // read of maps (proportional to the mappings, not the pages): call it only for processes
  // with shmem, where several of them may map the same object.
  Result<std::vector<SharedSegment>> read_shared_segments() const;
  // The command name (/proc/PID/comm, at most 15 characters); "?" when it cannot be read.
  std::string read_comm() const;
  // Re-reads ROOT/PID/stat by path: false when the PID is gone or now names another process.
  Result<bool> is_same_process() const;

  const TargetId& id() const { return id_; }
  pid_t pid() const { return id_.pid; }
  std::uint32_t uid() const { return uid_; }
  const std::string& name() const { return name_; }

 private:
  friend class ProcFs;
  ProcessHandle() = default;
  Error read_error(const char* file, int err) const;

  std::string in_dir(const char* file) const { return dir_ + '/' + file; }

  std::string dir_;  // ROOT/PID, for messages (a string: a path keeps a list of its parts)
  std::uint64_t page_size_bytes_ = 0;
  TargetId id_;
  std::uint32_t uid_ = 0;
  std::string name_;
  UniqueFd dir_fd_;  // pins this process's /proc directory: files opened from it are its own
  UniqueFd statm_fd_;
  UniqueFd status_fd_;
  std::uint64_t last_hwm_bytes_ = 0;
  UniqueFd clear_refs_fd_;  // opened on first reset
};

class ProcFs {
 public:
  explicit ProcFs(std::filesystem::path root = "/proc",
                  long page_size_bytes = ::sysconf(_SC_PAGESIZE));

  // Errors: "process N does not exist", "cannot open ...: Permission denied", a kernel thread.
  Result<ProcessHandle> open(pid_t pid) const;
  // The identity of whatever PID names now (stat read by path); an error when none or a zombie.
  Result<TargetId> identify(pid_t pid) const;
  // True while the process with this identity still runs (for restart recovery): false when the
  // PID is gone, a zombie, or reused by another process.
  Result<bool> is_alive(const TargetId& id) const;

  const std::filesystem::path& root() const { return root_; }
  std::uint64_t page_size_bytes() const { return page_size_bytes_; }

  // What admission needs of a PID, from one read of its status (no handle kept): its owner and
  // current RSS. A missing PID is "no such process"; a zombie has exited (kNotFound).
  struct Snapshot {
    std::uint32_t uid = 0;
    std::uint64_t rss_bytes = 0;
  };
  Result<Snapshot> snapshot(pid_t pid) const;

 private:
  Result<std::optional<TargetId>> identify_alive(pid_t pid) const;

  std::filesystem::path root_;
  std::uint64_t page_size_bytes_;
};

// Reads fd from offset 0 into buf (kept between calls: no allocation in steady state), growing
// it up to max_bytes until the text fits. Returns 0 and sets `len`, or the errno.
int pread_whole(int fd, std::vector<char>& buf, std::size_t max_bytes, std::size_t& len);

// Reads a whole small file (proc or cgroup) by path, up to max_bytes; for cold paths only.
Result<std::string> read_small_file(const std::filesystem::path& path, std::size_t max_bytes);

}  // namespace ramguard
