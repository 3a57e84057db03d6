#include "metrics/target_families.hpp"

namespace ramguard {
namespace {

constexpr std::array<TargetFamilyInfo, kTargetFamilyCount> kFamilies = {{
    {"ramguard_target_rss_bytes", "Resident set size of the watched process at the last reading",
     false},
    {"ramguard_target_memory_bytes",
     "Resident memory of the watched process by kind (anon, file = page cache, shmem; kernel for "
     "a cgroup); shmem is refreshed at marks, periodic readings count the rest of shared memory "
     "as file",
     false},
    {"ramguard_target_swap_bytes", "Swapped-out memory of the watched process at the last mark",
     false},
    {"ramguard_target_counted_bytes",
     "Memory that counts at the last reading: anon + shmem + swap, what the OOM killer cannot "
     "reclaim and what every verdict judges (page cache and kernel memory are not in it)",
     false},
    {"ramguard_target_peak_bytes",
     "Peak of the memory that counts of a run (its high-water mark less page cache and kernel "
     "memory), or peak resident memory of a watched process, since it was first watched",
     false},
    {"ramguard_target_peak_exact",
     "1 when the peak comes from the kernel high-water mark, 0 when it is only the largest sample",
     false},
    {"ramguard_target_up",
     "1 when the watched process's memory can be read, 0 when it cannot or the process has exited",
     false},
    {"ramguard_target_exited",
     "1 once the watched process has exited (its reading gauges are gone), 0 while it lives",
     false},
    {"ramguard_target_degraded", "1 while a measurement is degraded for this reason, 0 otherwise",
     false},
    {"ramguard_target_last_reading_timestamp_seconds",
     "Wall-clock time of the last reading of the watched process", false},
    {"ramguard_target_read_seconds",
     "Time the last reading of the watched process took the daemon's event loop (its status; "
     "a tree's members and walk included), on the steady clock",
     false},
    {"ramguard_target_slow_reads_total",
     "Readings of the watched process slower than sampling.slow_read (10ms by default): each "
     "delayed every other target's sample and every client's reply queued behind it",
     true},
    {"ramguard_target_pss_read_seconds",
     "Time the last PSS sum of a tree run (smaps_rollup of every member, at round ends) took its "
     "worker thread, off the event loop; never counted as a slow read",
     false},
    {"ramguard_phase_peak_bytes",
     "Peak of the memory that counts (anon + shmem + swap) in the last completed phase", false},
    {"ramguard_phase_duration_seconds", "Duration of the last completed phase", false},
    {"ramguard_boundary_rss_bytes", "Resident memory at the last round-end mark", false},
    {"ramguard_boundary_floor_bytes", "Settled floor of resident memory after the last round end",
     false},
    {"ramguard_boundary_counted_floor_bytes",
     "Settled floor of the memory that counts (anon + shmem + swap) after the last round end: "
     "the floor the growth verdicts judge",
     false},
    {"ramguard_target_scope_info",
     "1, labelled with what the run measures: process, tree or cgroup", false},
    {"ramguard_boundary_allocator_live_bytes",
     "Bytes the application holds in the C allocator at the last round end (allocator facts from "
     "the client)",
     false},
    {"ramguard_boundary_allocator_free_bytes",
     "Freed bytes the C allocator keeps instead of returning them, at the last round end "
     "(allocator facts from the client)",
     false},
    {"ramguard_boundary_round", "Number of the round whose boundary was last recorded", false},
    {"ramguard_phase_gap_seconds", "Last measured interval between two configured marks", false},
    {"ramguard_admissions_total", "Admission decisions, by decision (admitted, refused)", true},
    {"ramguard_admission_headroom_bytes",
     "Headroom left under budget minus margin at the last decision; negative when refused", false},
    {"ramguard_verdicts_total",
     "Verdicts issued, by kind and severity (info, warning, critical; pass, fail, allocator or "
     "not_verified for release)",
     true},
    {"ramguard_verdict_active",
     "1 while a warning verdict of this kind holds for the active run; 0 otherwise, and for every "
     "kind once the run ended",
     false},
    {"ramguard_job_peak_bytes",
     "Largest measured peak of the job's ended runs owned by this uid (what admission calibrates "
     "from), since the daemon started",
     false},
    {"ramguard_job_peak_estimate_ratio",
     "Measured peak over admitted estimate of the job's last ended run with an estimate, by "
     "owner uid; above 1 the estimate was too low",
     false},
    {"ramguard_job_runs",
     "Ended runs of the job owned by this uid counted since the daemon started", false},
}};

}  // namespace

const TargetFamilyInfo& info(TargetFamily family) {
  return kFamilies[static_cast<std::size_t>(family)];
}

}  // namespace ramguard
