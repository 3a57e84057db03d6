#pragma once
// The kernel's OOM-kill counter of a process's memory cgroup: v1 memory.oom_control or v2
// memory.events, both with an "oom_kill N" line. A rise across a process's exit is how the
// kernel tells that an OOM kill happened. Parsers are pure; readers take their roots.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "ramguard/base/result.hpp"

namespace ramguard {

struct MemoryCgroup {
  std::string path;  // as in /proc/PID/cgroup, starting with '/'
  bool v2 = false;   // from the unified "0::" line (no v1 memory controller listed)
};

// From /proc/PID/cgroup text: the v1 line whose controllers include "memory", else the v2 line.
Result<MemoryCgroup> parse_memory_cgroup(std::string_view proc_cgroup_text);
// The "oom_kill N" line of memory.oom_control (v1) or memory.events (v2).
Result<std::uint64_t> parse_oom_kill_count(std::string_view text);

// ROOT/memory/PATH/memory.oom_control for v1; ROOT/PATH/memory.events (or ROOT/unified/...,
// the hybrid layout) for v2. `proc_root` and `cgroup_root` are /proc and /sys/fs/cgroup.
Result<std::filesystem::path> find_oom_counter(const std::filesystem::path& proc_root, pid_t pid,
                                               const std::filesystem::path& cgroup_root);
Result<std::uint64_t> read_oom_kill_count(const std::filesystem::path& counter_file);

}  // namespace ramguard
