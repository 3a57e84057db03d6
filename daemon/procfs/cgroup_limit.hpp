#pragma once
// The memory limit a process lives under: the smallest limit of its memory cgroup and every
// ancestor (v1 memory.limit_in_bytes, v2 memory.max). A Load running in a container cannot use
// more than that, whatever the configured budget says. Parsers are pure; readers take roots.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "ramguard/base/result.hpp"

namespace ramguard {

// One limit file's text: v2 "max" and v1's "unlimited" value (a page counter's maximum, about
// 2^63) are no limit (nullopt); anything else not a number is an error.
Result<std::optional<std::uint64_t>> parse_cgroup_limit(std::string_view text);

struct CgroupLimit {
  std::optional<std::uint64_t> bytes;  // nullopt: no limit anywhere up the hierarchy
  std::filesystem::path binding_dir;   // the directory whose limit is the smallest
};

// Walks from `dir` (a memory cgroup directory under cgroup_root) up to the hierarchy's root and
// returns the smallest limit. v2 when the directory has no memory.usage_in_bytes.
Result<CgroupLimit> read_cgroup_limit(const std::filesystem::path& cgroup_root,
                                      const std::filesystem::path& dir);

// The limit over PID's memory cgroup (its /proc/PID/cgroup line).
Result<CgroupLimit> process_cgroup_limit(const std::filesystem::path& proc_root, pid_t pid,
                                         const std::filesystem::path& cgroup_root);

}  // namespace ramguard
