#pragma once
// `budget: auto`: the budget is the node's MemTotal less a system reserve (the kernel, the
// init system, the guard and whatever else the node runs), read when the daemon starts and at
// every reload. Not the daemon's own cgroup limit: the guard runs in its own container or
// service (a DaemonSet pod, a sidecar container, a systemd unit) whose small limit is not the
// coordinator's. The coordinator's limit is the cgroup cap of every admission and phase-begin
// forecast, measured on the Load's process itself (admission/admission.hpp).

#include <filesystem>

#include "config/config.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

// With budget_auto set: budget_bytes = MemTotal (PROC_ROOT/meminfo) - system_reserve_bytes, and
// auto_total_bytes = MemTotal. Errors name the file, or the reserve and MemTotal when the
// reserve leaves nothing. Without budget_auto: the config unchanged.
Result<Config> with_auto_budget(Config config, const std::filesystem::path& proc_root = "/proc");

}  // namespace ramguard
