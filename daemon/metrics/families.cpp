#include "metrics/families.hpp"

#include <string>

namespace ramguard {
namespace {

prometheus::Family<prometheus::Gauge>& gauge(prometheus::Registry& r, const std::string& name,
                                             const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}

prometheus::Family<prometheus::Counter>& counter(prometheus::Registry& r, const std::string& name,
                                                 const std::string& help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}

}  // namespace

prometheus::Histogram::BucketBoundaries sample_duration_buckets() {
  return {1e-6, 2e-6, 5e-6, 1e-5, 2e-5, 5e-5, 1e-4, 2.5e-4, 1e-3};
}

MetricFamilies::MetricFamilies(prometheus::Registry& r)
    : build_info(gauge(r, "ramguard_build_info", "ramguardd build; always 1, version label")),
      start_time_seconds(gauge(r, "ramguard_start_time_seconds",
                               "Wall-clock time ramguardd started, in seconds since the epoch")),
      budget_bytes(gauge(r, "ramguard_budget_bytes", "Memory budget for admission and alerts")),
      budget_margin_bytes(gauge(r, "ramguard_budget_margin_bytes",
                                "Margin kept free below the budget when admitting")),
      reserved_bytes(gauge(r, "ramguard_reserved_bytes",
                           "Sum of the estimates of all active admission reservations")),
      runs_active(gauge(r, "ramguard_runs_active", "Runs currently being guarded")),
      store_available(gauge(r, "ramguard_store_available",
                            "1 when the run ledger database is open (readable), 0 when not")),
      store_writable(gauge(r, "ramguard_store_writable",
                           "1 when writes reach the run ledger, 0 when it is read-only, full, "
                           "corrupt or failing (guarding goes on in memory)")),
      max_targets(gauge(r, "ramguard_metrics_max_targets",
                        "Targets (runs, admissions, watched PIDs) with series of their own "
                        "(metrics.max_targets)")),
      targets_folded(gauge(r, "ramguard_metrics_targets_folded",
                           "Live targets past metrics.max_targets, sharing the series labelled "
                           "\"other\"")),
      target_rss_bytes(gauge(r, "ramguard_target_rss_bytes",
                             "Resident set size of the watched process at the last reading")),
      target_memory_bytes(
          gauge(r, "ramguard_target_memory_bytes",
                "Resident memory of the watched process by kind (anon, file, shmem); shmem is "
                "refreshed at marks, periodic readings count the rest of shared memory as file")),
      target_swap_bytes(gauge(r, "ramguard_target_swap_bytes",
                              "Swapped-out memory of the watched process at the last mark")),
      target_peak_bytes(
          gauge(r, "ramguard_target_peak_bytes",
                "Peak resident memory of the run (or watched process) since it was first watched")),
      target_peak_exact(gauge(r, "ramguard_target_peak_exact",
                              "1 when the peak comes from the kernel high-water mark, 0 when "
                              "it is only the largest sample")),
      target_up(gauge(r, "ramguard_target_up",
                      "1 when the watched process's memory can be read, 0 when it cannot or "
                      "the process has exited")),
      target_exited(gauge(r, "ramguard_target_exited",
                          "1 once the watched process has exited (its reading gauges are gone), "
                          "0 while it lives")),
      target_degraded(gauge(r, "ramguard_target_degraded",
                            "1 while a measurement is degraded for this reason, 0 otherwise")),
      target_last_reading_timestamp_seconds(
          gauge(r, "ramguard_target_last_reading_timestamp_seconds",
                "Wall-clock time of the last reading of the watched process")),
      phase_peak_bytes(gauge(r, "ramguard_phase_peak_bytes",
                             "Peak resident memory of the last completed phase")),
      phase_duration_seconds(
          gauge(r, "ramguard_phase_duration_seconds", "Duration of the last completed phase")),
      boundary_rss_bytes(
          gauge(r, "ramguard_boundary_rss_bytes", "Resident memory at the last round-end mark")),
      boundary_floor_bytes(gauge(r, "ramguard_boundary_floor_bytes",
                                 "Settled floor of resident memory after the last round end")),
      target_scope_info(gauge(r, "ramguard_target_scope_info",
                              "1, labelled with what the run measures: process, tree or cgroup")),
      boundary_allocator_live_bytes(
          gauge(r, "ramguard_boundary_allocator_live_bytes",
                "Bytes the application holds in the C allocator at the last round end "
                "(allocator facts from the client)")),
      boundary_allocator_free_bytes(
          gauge(r, "ramguard_boundary_allocator_free_bytes",
                "Freed bytes the C allocator keeps instead of returning them, at the last round "
                "end (allocator facts from the client)")),
      boundary_round(gauge(r, "ramguard_boundary_round",
                           "Number of the round whose boundary was last recorded")),
      phase_gap_seconds(gauge(r, "ramguard_phase_gap_seconds",
                              "Last measured interval between two configured marks")),
      admissions_total(counter(r, "ramguard_admissions_total",
                               "Admission decisions, by decision (admitted, refused)")),
      admission_headroom_bytes(gauge(
          r, "ramguard_admission_headroom_bytes",
          "Headroom left under budget minus margin at the last decision; negative when refused")),
      verdicts_total(counter(r, "ramguard_verdicts_total",
                             "Verdicts issued, by kind and severity (info, warning, critical; "
                             "pass or fail for release)")),
      verdict_active(gauge(r, "ramguard_verdict_active",
                           "1 while a warning verdict of this kind holds for the active run; 0 "
                           "otherwise, and for every kind once the run ended")),
      sample_duration_seconds(prometheus::BuildHistogram()
                                  .Name("ramguard_sample_duration_seconds")
                                  .Help("Time taken by one periodic sample of a target")
                                  .Register(r)),
      self_rss_bytes(gauge(r, "ramguard_self_rss_bytes", "Resident set size of ramguardd itself")),
      jemalloc_allocated_bytes(
          gauge(r, "ramguard_jemalloc_allocated_bytes", "ramguardd's jemalloc stats.allocated")),
      jemalloc_active_bytes(
          gauge(r, "ramguard_jemalloc_active_bytes", "ramguardd's jemalloc stats.active")),
      jemalloc_resident_bytes(
          gauge(r, "ramguard_jemalloc_resident_bytes", "ramguardd's jemalloc stats.resident")),
      jemalloc_retained_bytes(
          gauge(r, "ramguard_jemalloc_retained_bytes", "ramguardd's jemalloc stats.retained")) {}

}  // namespace ramguard
