#include "runs/admission_sources.hpp"

#include <algorithm>
#include <set>

#include "common/log.hpp"
#include "procfs/cgroup_memory.hpp"
#include "procfs/process_tree.hpp"

namespace ramguard {

Result<LoadProcess> ProcLoadBaselines::process(pid_t pid) {
  // One status read: admissions come in bursts, and nothing here is kept.
  auto snapshot = procfs_.snapshot(pid);
  if (!snapshot) return Error{snapshot.error().message, ErrorKind::kNotFound};
  return LoadProcess{snapshot->uid, snapshot->rss_bytes};
}

Result<std::uint64_t> ProcLoadBaselines::scope_baseline(pid_t pid, Scope scope,
                                                        std::uint64_t own_rss_bytes) {
  if (scope == Scope::kTree) {
    ProcessTree tree(procfs_, pid);
    tree.refresh();
    MemoryReading own;
    own.rss_bytes = own_rss_bytes;
    return tree.add_descendants(own, Instant{}, false).rss_bytes;
  }
  const RunParams& params = registry_.params();
  auto cgroup = open_memory_cgroup(params.proc_root, params.cgroup_root, pid);
  if (!cgroup) return Error{cgroup.error().message, ErrorKind::kInvalidArgument};
  auto usage = cgroup->read_periodic(Instant{});
  if (!usage) return Error{usage.error().message, ErrorKind::kUnavailable};
  return usage->rss_bytes;
}

RegistryMachineState::RegistryMachineState(const ProcFs& procfs, const RunRegistry& registry)
    : registry_(registry) {
  if (auto reader = MeminfoReader::open(procfs.root())) {
    meminfo_.emplace(std::move(*reader));
  } else {
    log::warning("admission.meminfo",
                 {{"message", reader.error().message},
                  {"effect", "admissions are not capped by the node's memory"}});
  }
}

std::vector<RunHolding> RegistryMachineState::holdings() {
  std::vector<RunHolding> out;
  std::vector<std::pair<std::size_t, std::uint64_t>> with_shmem;  // index in out, shmem bytes
  for (const RunMachine* r : registry_.runs()) {
    const RunLedger& ledger = r->ledger();
    if (ledger.state != RunState::kActive) continue;
    // The newest reading; before the first one, the baseline.
    const MemoryReading& now = ledger.last.rss_bytes != 0 ? ledger.last : ledger.baseline;
    if (now.shmem_bytes > 0) with_shmem.emplace_back(out.size(), now.shmem_bytes);
    out.push_back({ledger.info.run_id, now.counted_bytes()});
  }
  if (with_shmem.size() >= 2) count_shared_once(out, with_shmem);
  return out;
}

// A shared-memory object (a /dev/shm file, a memfd) that processes of several runs map is in
// each run's shmem: it is one allocation, so the held sum counts it once, with the oldest run
// that maps it. Maps are read only for runs with shmem, and only when two or more have some.
void RegistryMachineState::count_shared_once(
    std::vector<RunHolding>& held,
    std::span<const std::pair<std::size_t, std::uint64_t>> with_shmem) {
  std::set<SharedSegment> counted;
  for (const auto& [index, shmem_bytes] : with_shmem) {
    auto segments = registry_.shared_segments(held[index].run_id);
    if (!segments) {
      log::debug("admission.shared_segments_unread",
                 {{"run", held[index].run_id}, {"reason", segments.error().message}});
      continue;
    }
    std::uint64_t twice = 0;
    for (const SharedSegment& seg : *segments) {
      if (!counted.insert(seg).second) twice += seg.bytes;
    }
    twice = std::min({twice, shmem_bytes, held[index].held_bytes});
    if (twice == 0) continue;
    held[index].held_bytes -= twice;
    log::debug("admission.shared_counted_once", {{"run", held[index].run_id}, {"bytes", twice}});
  }
}

AdmitCaps RegistryMachineState::caps(pid_t pid) {
  AdmitCaps caps;
  if (meminfo_) {
    if (auto node = meminfo_->read()) {
      caps.node_available_bytes = node->available_bytes;
    } else {
      log::warning("admission.meminfo", {{"message", node.error().message}});
    }
  }
  if (pid <= 0) return caps;
  const auto now = std::chrono::steady_clock::now();
  auto cached = cgroup_limits_.find(pid);
  if (cached == cgroup_limits_.end() || now - cached->second.read_at > std::chrono::seconds(1)) {
    if (cgroup_limits_.size() >= 4096) cgroup_limits_.clear();
    CachedLimit fresh{now, {}};
    const RunParams& params = registry_.params();
    if (auto limit = process_cgroup_limit(params.proc_root, pid, params.cgroup_root)) {
      fresh.limit = *limit;
    } else {
      // No memory cgroup (e.g. a v1 node without the controller mounted): no cgroup cap.
      log::debug("admission.cgroup", {{"pid", pid}, {"message", limit.error().message}});
    }
    cached = cgroup_limits_.insert_or_assign(pid, std::move(fresh)).first;
  }
  caps.cgroup_limit_bytes = cached->second.limit.bytes;
  if (caps.cgroup_limit_bytes) caps.cgroup_dir = cached->second.limit.binding_dir.string();
  return caps;
}

}  // namespace ramguard
