// Restart recovery: what the ledger says was active either resumes (same PID and start time
// still alive) or ends `lost`. Reservations come back with their runs.
#include <algorithm>

#include "common/log.hpp"
#include "runs/run_registry.hpp"

namespace ramguard {

Status RunRegistry::connect(Entry& entry, const TargetId& target) {
  const std::string run_id = entry.machine->run_id();
  auto key = sampler_.add(target, reading_sink(run_id), run_id);
  if (!key) return key.error();
  entry.key = *key;
  const RunInfo& info = entry.machine->ledger().info;
  std::optional<CgroupMemory> cgroup;
  if (info.scope == Scope::kCgroup) {
    auto opened = CgroupMemory::open(info.cgroup_dir);
    if (!opened) {
      sampler_.remove(*key);
      return opened.error();
    }
    cgroup.emplace(std::move(*opened));
  }
  if (auto attached = sampler_.attach(*key, info.scope, std::move(cgroup)); !attached) {
    return attached;
  }
  if (info.scope == Scope::kCgroup) {
    if (auto kills = sampler_.cgroup_oom_kills(*key)) entry.oom_kills = *kills;
  }
  watch_exit(entry, target);
  return ok_status();
}

void RunRegistry::recover(RunSource& source) {
  std::vector<std::string> resumed_ids;
  const Status read = source.for_each_active_run([&](RunLedger head,
                                                     RunRecords& records) -> Status {
    const std::string run_id = head.info.run_id;
    const TargetId target = head.info.target;
    auto machine = RunMachine::resume(std::move(head), records, params_, observers_);
    if (!machine) return machine.error();  // the source skips the run and ends it lost
    auto entry = std::make_unique<Entry>();
    entry->machine = std::move(*machine);
    apply_cgroup_budget(*entry->machine);
    Entry& ref = *entry;
    runs_[run_id] = std::move(entry);
    if (auto connected = connect(ref, target); !connected) {
      const Instant now = clock_.now();
      ref.machine->lost(now);
      ref.forget_at = now;
      ref.forget_at->monotonic += params_.ended_retention;
      log::warning("recovery.lost",
                   {{"run", run_id}, {"pid", target.pid}, {"reason", connected.error().message}});
      return ok_status();
    }
    resumed_ids.push_back(run_id);
    log::info("recovery.resumed", {{"run", run_id},
                                   {"job", ref.machine->ledger().info.job},
                                   {"pid", target.pid},
                                   {"marks", ref.machine->ledger().mark_count()}});
    return ok_status();
  });
  if (!read) {
    log::error("recovery.failed", {{"reason", read.error().message}});
    return;
  }
  // Reservations: those of resumed runs and unexpired unclaimed ones come back.
  if (auto reservations = source.load_reservations()) {
    const auto now_ms = unix_ms(clock_.now());
    for (const Reservation& r : *reservations) {
      const bool claimed_by_resumed =
          !r.run_id.empty() &&
          std::find(resumed_ids.begin(), resumed_ids.end(), r.run_id) != resumed_ids.end();
      const bool live_lease = r.run_id.empty() && r.expires_wall_ms > now_ms;
      if (claimed_by_resumed || live_lease) {
        if (auto s = admission_.restore(r); !s) {
          log::warning("recovery.reservation_dropped",
                       {{"reservation", r.id}, {"reason", s.error().message}});
        }
      }
    }
  } else {
    log::error("recovery.reservations_failed", {{"reason", reservations.error().message}});
  }
  sync_reservations();
  publish_counts();
}

}  // namespace ramguard
