#pragma once
// The `tree` run scope: a process and all its descendants, followed as they start and exit.
// Descendants are found through every known member's /proc/PID/task/TID/children (a bounded
// rescan of the tree itself, never of all of /proc), or told one by one (adopt: the proc
// connector's fork events), each kept open as a ProcessHandle, so a periodic reading is one
// status pread per member and a reused PID is never summed by mistake.
//
// What the figures mean: RSS is summed per process, except shared memory: a /dev/shm file,
// memfd or SysV segment several members map (PyTorch's shared tensors) counts once, at its
// allocated size (st_blocks: the pages it holds, not its length), in shmem, counted memory, RSS and
// the peak. Other shared pages (a library's, copy-on-write after fork) count once per process. A
// tree's peak is the sum of its members' high-water marks less the shared memory counted twice now,
// a bound: the members may have peaked at different moments. A child that starts and exits between
// two readings is not seen.

#include <sys/types.h>

#include <cstddef>
#include <map>
#include <span>
#include <utility>
#include <vector>

#include "model/reading.hpp"
#include "procfs/proc_fs.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

// The PIDs listed in ROOT/PID/task/*/children (children of every thread of PID).
std::vector<pid_t> read_children(const std::filesystem::path& proc_root, pid_t pid);

// Shared memory of several processes, each given with its RssShmem and the objects it maps
// (nullptr: not known), counted once: the sum of the distinct objects they map, plus, per
// process, what its objects do not explain.
std::uint64_t shmem_counted_once(
    std::span<const std::pair<const std::vector<SharedSegment>*, std::uint64_t>> mappers);

class ProcessTree {
 public:
  ProcessTree(const ProcFs& procfs, pid_t root) : procfs_(&procfs), root_(root) {}

  // Opens descendants that appeared since the last call; members that exited are dropped
  // when they fail to read.
  void refresh();
  // CHILD was just forked by a member (or the root): a member from now on, without a walk.
  // A child that has already exited is not added.
  void adopt(pid_t child);
  bool contains(pid_t pid) const { return pid == root_ || members_.contains(pid); }
  // `root` (the root's own reading) plus every descendant's, read the same way (complete:
  // status, with high-water marks; else statm). PSS is not read here: it walks page tables
  // (sampling/pss_reader.hpp reads it off the event loop).
  // root_handle: the root's own handle, for the shared memory it maps (nullptr: its RssShmem).
  MemoryReading add_descendants(MemoryReading root, const Instant& at, bool complete,
                                const ProcessHandle* root_handle = nullptr);
  // The descendants as last found (not the root).
  std::vector<TargetId> members() const;
  // Every descendant's high-water mark restarts (the root's is its handle's). The first
  // failure is returned; the others are still reset.
  Status reset_hwm();
  // Each process's counted memory at the last complete add_descendants (the root first):
  // which processes hold the tree's memory, and by comparison which grew.
  const std::vector<ProcessShare>& shares() const { return shares_; }
  std::size_t descendants() const { return members_.size(); }
  // The shared-memory objects the descendants map (not the root's: its handle is the
  // caller's), each object once; a member whose maps cannot be read is left out.
  std::vector<SharedSegment> shared_segments() const;
  // Members the last add_descendants found exited (and dropped).
  std::size_t gone_at_last_reading() const { return gone_.size(); }

 private:
  const ProcFs* procfs_;
  pid_t root_;
  std::map<pid_t, ProcessHandle> members_;
  std::vector<ProcessShare> shares_;
  std::vector<pid_t> gone_;  // reused every reading: no allocation in steady state

  // Each process's shared-memory objects as last read from its maps, with the RssShmem it had
  // then: maps are read again only when that changes or every kSegmentsRereadEvery readings,
  // so a steady tree of 32 workers does not read 33 maps per reading on the event loop.
  struct Segments {
    std::uint64_t rss_shmem_bytes = 0;
    std::uint32_t readings = 0;
    bool known = false;  // the maps could be read
    std::vector<SharedSegment> objects;
  };
  const std::vector<SharedSegment>* segments_of(const ProcessHandle& handle,
                                                std::uint64_t rss_shmem_bytes);
  std::map<pid_t, Segments> segments_;

 public:
  static constexpr std::uint32_t kSegmentsRereadEvery = 150;  // 5 min at the default 2 s
};

}  // namespace ramguard
