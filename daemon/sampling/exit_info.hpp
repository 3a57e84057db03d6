#pragma once
// What the kernel told about a target's exit, and how to say it in words.

#include <signal.h>

#include <cstdint>
#include <optional>
#include <string>

#include "procfs/cgroup_memory.hpp"

namespace ramguard {

struct ExitInfo {
  bool status_known = false;  // waitid for the daemon's children, the proc connector for others
  int exit_code = 0;          // when it exited normally
  int signal = 0;             // when a signal ended it
  bool core_dumped = false;
  bool oom_killed = false;  // the memory cgroup's oom_kill counter rose across the exit
  std::string detail;       // one line for logs and the exited verdict
  // The process's memory cgroup as read the moment the exit was seen (before the exit status
  // is awaited): its peak survives a cgroup removed right after the kill.
  std::string cgroup_dir{};
  std::optional<CgroupPeak> cgroup_peak{};
};

// The memory cgroup's oom_kill counter before and after the exit, when it could be read.
struct OomEvidence {
  std::optional<std::uint64_t> before;
  std::optional<std::uint64_t> after;
  std::string cgroup_file;  // the counter file, for the detail
  std::string problem;      // why there is no evidence, when there is none
};

// A wait status as waitpid or the proc connector gives it, as an ExitInfo with status_known.
ExitInfo exit_info_from_wait_status(int wait_status);

// Fills oom_killed and detail from the status fields and the OOM evidence. Pure.
// With a known status an OOM kill is a SIGKILL plus a rise; without one a rise alone is reported.
void describe_exit(ExitInfo& info, pid_t pid, const OomEvidence& oom);

}  // namespace ramguard
