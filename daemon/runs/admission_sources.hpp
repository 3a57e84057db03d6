#pragma once
// The admission desk's view of this machine (admission/sources.hpp), read here because the
// reading needs /proc, cgroups and the registry's runs: the Load's process and its scope's
// baseline, the active runs with what they hold, MemAvailable (one pread of a kept-open file)
// and the memory cgroup limit over a PID (cached for a second: admissions come in bursts from
// the same processes, and a process's cgroup and its limits change rarely).

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <span>
#include <unordered_map>

#include "admission/sources.hpp"
#include "procfs/cgroup_limit.hpp"
#include "procfs/meminfo.hpp"
#include "procfs/proc_fs.hpp"
#include "runs/run_registry.hpp"

namespace ramguard {

class ProcLoadBaselines final : public LoadBaselines {
 public:
  // The registry's parameters name the proc and cgroup roots (fixtures in tests).
  ProcLoadBaselines(const ProcFs& procfs, const RunRegistry& registry)
      : procfs_(procfs), registry_(registry) {}
  Result<LoadProcess> process(pid_t pid) override;
  Result<std::uint64_t> scope_baseline(pid_t pid, Scope scope,
                                       std::uint64_t own_rss_bytes) override;

 private:
  const ProcFs& procfs_;
  const RunRegistry& registry_;
};

class RegistryMachineState final : public MachineState {
 public:
  // Opens PROC_ROOT/meminfo once; without it admissions are not capped by the node (logged).
  RegistryMachineState(const ProcFs& procfs, const RunRegistry& registry);
  std::vector<RunHolding> holdings() override;
  AdmitCaps caps(pid_t pid) override;

 private:
  struct CachedLimit {
    std::chrono::steady_clock::time_point read_at;
    CgroupLimit limit;
  };
  void count_shared_once(std::vector<RunHolding>& held,
                         std::span<const std::pair<std::size_t, std::uint64_t>> with_shmem);

  const RunRegistry& registry_;
  std::optional<MeminfoReader> meminfo_;
  std::unordered_map<pid_t, CachedLimit> cgroup_limits_;  // per PID, for a second
};

}  // namespace ramguard
