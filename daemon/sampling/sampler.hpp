#pragma once
// The periodic sampler: one steady_timer on the daemon's io_context, rescheduled on a fixed
// cadence, reads every target's statm (ProcessHandle::read_periodic) and hands each reading,
// or the error that replaced it, to that target's sink. Mark-time reads and high-water resets
// go through read_now/reset_hwm. Targets are keyed by TargetKey, never by PID.

#include <sys/types.h>

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.hpp"
#include "model/reading.hpp"
#include "model/scope.hpp"
#include "procfs/cgroup_memory.hpp"
#include "procfs/proc_fs.hpp"
#include "procfs/process_tree.hpp"
#include "ramguard/base/result.hpp"
#include "sampling/proc_events.hpp"

namespace ramguard {

using TargetKey = std::uint64_t;
// Called on every tick per target: a reading, or an error (exited, unreadable) meaning the
// target is degraded, and the target's read timing with this reading in it. The target stays
// until remove(); the sink decides what an error means.
using ReadingSink =
    std::function<void(const TargetId&, const Result<MemoryReading>&, const ReadTiming&)>;

class Sampler {
 public:
  Sampler(asio::io_context& io, ProcFs& procfs, const Clock& clock,
          std::chrono::nanoseconds interval);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Starts ticking (first tick one interval from now); stop() cancels. Both idempotent.
  void start();
  void stop();

  // Opens PID (identity fixed now) and samples it from the next tick on. NAME is what the
  // sampler's log lines call the target (a run id); empty: "pid-<PID>".
  Result<TargetKey> add(pid_t pid, ReadingSink sink, std::string name = {});
  // As add(pid), but fails when the PID no longer names this process.
  Result<TargetKey> add(const TargetId& id, ReadingSink sink, std::string name = {});
  void remove(TargetKey key);  // unknown keys are ignored; safe from inside a sink
  // What the target's readings measure from now on; the one way runs, recovered runs and
  // watched PIDs attach a scope. kProcess: the PID alone (the default). kTree: the process and
  // its descendants (procfs/process_tree.hpp). kCgroup: CGROUP's counters (required then, and
  // only then); the process still decides whether the target lives (its exit ends the run).
  Status attach(TargetKey key, Scope scope, std::optional<CgroupMemory> cgroup = std::nullopt);
  // Trees learn of new processes from EVENTS' forks (it must outlive this sampler) and are
  // re-walked only when a member exits (its children are re-parented away from the tree),
  // when events were lost, and every kTreeWalkEveryReadings-th reading in case of a miss.
  // Without this call, every reading of a tree re-walks it (task/*/children of every member).
  void follow_forks(ProcEvents& events);
  const ProcFs& procfs() const { return procfs_; }
  static constexpr std::uint32_t kTreeWalkEveryReadings = 150;  // 5 min at the default 2 s
  std::uint64_t tree_walks() const { return tree_walks_; }
  // A tree's processes at its last complete reading (empty for other scopes).
  std::vector<ProcessShare> tree_shares(TargetKey key) const;
  // A tree's processes, the root first (empty for other scopes): what its PSS is read from.
  std::vector<TargetId> tree_processes(TargetKey key) const;
  std::optional<std::filesystem::path> cgroup_dir(TargetKey key) const;
  // The cgroup's OOM-kill counter (memory.oom_control / memory.events); an error when the
  // target has no cgroup scope or the counter cannot be read.
  Result<std::uint64_t> cgroup_oom_kills(TargetKey key);
  // The cgroup's peak usage since the last reset and its own limit (0: none): read when its
  // process dies, so the death verdict has the exact peak the periodic readings may miss.
  Result<CgroupPeak> cgroup_peak(TargetKey key);
  // Process scope: VmHWM at the target's last reading (0: none since the last reset, another
  // scope, or an unknown key). What a process that dies between readings leaves as its peak.
  std::uint64_t last_hwm_bytes(TargetKey key) const;
  // The shared-memory objects the target's processes map (process: the PID; tree: it and its
  // descendants), each once; empty for the cgroup scope, whose cgroup is charged each page
  // once. Reads maps: for admissions, not for every reading.
  Result<std::vector<SharedSegment>> shared_segments(TargetKey key) const;

  // On demand: complete = status (full split, swap, HWM; for marks), else statm.
  Result<MemoryReading> read_now(TargetKey key, bool complete);
  Status reset_hwm(TargetKey key);
  Result<bool> is_same_process(TargetKey key) const;
  // Every reading (periodic, read_now) is timed on the steady clock; one longer than
  // slow_read() counts as slow, and the target's first slow reading logs a warning.
  ReadTiming read_timing(TargetKey key) const;  // zero for an unknown key
  // A PSS sum of the target read off the loop (sampling/pss_reader.hpp) took SECONDS.
  void note_pss_read(TargetKey key, double seconds);
  // sampling.slow_read; takes effect from the next reading.
  void set_slow_read(std::chrono::nanoseconds threshold) { slow_read_ = threshold; }
  std::chrono::nanoseconds slow_read() const { return slow_read_; }
  std::optional<TargetId> target(TargetKey key) const;
  std::optional<std::uint32_t> owner_uid(TargetKey key) const;

  // Takes effect from the next tick.
  void set_interval(std::chrono::nanoseconds interval);
  std::chrono::nanoseconds interval() const { return interval_; }
  std::size_t size() const { return targets_.size(); }
  std::uint64_t ticks() const { return ticks_; }
  // Wall time the last tick spent reading all targets: the daemon's own sampling cost.
  double last_sample_duration_seconds() const { return last_sample_duration_seconds_; }

 private:
  struct Target {
    ProcessHandle handle;
    ReadingSink sink;
    std::optional<CgroupMemory> cgroup;  // set: the target is this cgroup (run scope cgroup)
    std::optional<ProcessTree> tree;     // set: the process and its descendants (scope tree)
    bool removed = false;                // remove() ran during a tick: not read again
    std::uint32_t readings_since_walk = 0;
    bool walk_due = true;  // a member exited, or events were lost, since the last walk
    std::string name{};    // in log lines; empty: "pid-<PID>"
    ReadTiming timing{};
  };
  // read_target on the clock, its duration counted in the target's timing.
  Result<MemoryReading> timed_read(Target& target, bool complete);
  Result<MemoryReading> read_target(Target& target, const Instant& at, bool complete);
  void refresh_tree(Target& target, bool complete);
  void on_fork(const ProcFork& fork);
  void on_exit(pid_t pid);
  void count_tree(int delta);
  void schedule();
  void tick();
  Error unknown(TargetKey key) const;

  ProcFs& procfs_;
  const Clock& clock_;
  std::chrono::nanoseconds interval_;
  asio::steady_timer timer_;
  asio::steady_timer::time_point next_deadline_{};
  bool running_ = false;
  std::uint64_t generation_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  TargetKey next_key_ = 1;
  std::map<TargetKey, std::shared_ptr<Target>> targets_;
  // The tick's snapshot (a sink may add or remove targets), reused: no allocation in steady
  // state, and no map lookup per target.
  std::vector<std::shared_ptr<Target>> tick_targets_;
  std::uint64_t ticks_ = 0;
  ProcEvents* events_ = nullptr;
  std::size_t trees_ = 0;  // targets with the tree scope: forks are followed while any
  std::uint64_t tree_walks_ = 0;
  double last_sample_duration_seconds_ = 0;
  // 10 ms, as config.sampling.slow_read: a statm read is ~3 us, a 32-worker tree's ~60 us.
  std::chrono::nanoseconds slow_read_ = std::chrono::milliseconds(10);
};

}  // namespace ramguard
