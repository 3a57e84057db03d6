#pragma once
// The coordinator is gone. `exited`: the process ended during a run (critical): exit code or
// signal, OOM kill where the kernel says so, the last phase, the last reading and the round.
// `lost`: the daemon restarted and the process (same PID and start time) is no longer there.

#include <cstdint>
#include <optional>
#include <string>

#include "model/ledger.hpp"

namespace ramguard {

struct RunPosition {
  std::string phase;  // the open phase, else the last phase marked; "" when none
  bool phase_open = false;
  std::uint32_t round = 0;  // the round in progress (last mark's round, +1 after a round end)
};

RunPosition run_position(const RunLedger& ledger);

// In cgroup scope, what the cgroup itself knew when its process died: its peak usage since the
// last reset (memory.max_usage_in_bytes / memory.peak; page cache included, which the kernel
// reclaims before it kills, so at an OOM kill it is the memory that could not be reclaimed)
// and its limit (0: none set).
struct CgroupDeathPeak {
  std::uint64_t peak_usage_bytes = 0;
  std::uint64_t limit_bytes = 0;
};

Verdict exited_verdict(const RunLedger& ledger, std::optional<int> exit_code,
                       std::optional<int> signal, bool oom_killed, Instant at,
                       const std::optional<CgroupDeathPeak>& cgroup = std::nullopt);

Verdict lost_verdict(const RunLedger& ledger, Instant at);

// The coordinator ended its run because it failed (run_end's failure, e.g. an exception).
Verdict failed_verdict(const RunLedger& ledger, const std::string& failure, Instant at);

}  // namespace ramguard
