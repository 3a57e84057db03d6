#include "metrics/families.hpp"

#include <string>

namespace ramguard {
namespace {

prometheus::Family<prometheus::Gauge>& gauge(prometheus::Registry& r, const std::string& name,
                                             const std::string& help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r);
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
      store_journal_writes(gauge(r, "ramguard_store_journal_writes",
                                 "Accepted writes waiting in memory for the ledger to take "
                                 "writes again (written in order when it does)")),
      store_journal_max_writes(gauge(r, "ramguard_store_journal_max_writes",
                                     "Bound of the ledger journal; past it the oldest writes "
                                     "are dropped")),
      store_journal_dropped(prometheus::BuildCounter()
                                .Name("ramguard_store_journal_dropped_total")
                                .Help("Accepted writes the ledger never got: dropped from a "
                                      "full journal or refused when written")
                                .Register(r)),
      max_targets(gauge(r, "ramguard_metrics_max_targets",
                        "Targets (runs, admissions, watched PIDs) with series of their own "
                        "(metrics.max_targets)")),
      targets_folded(gauge(r, "ramguard_metrics_targets_folded",
                           "Live targets past metrics.max_targets, sharing the series labelled "
                           "\"other\"")),
      user_reserved_bytes(gauge(r, "ramguard_user_reserved_bytes",
                                "Bytes the reservations of each user hold, claimed or not "
                                "(uid; \"other\" sums the smallest past 32 users)")),
      user_active_runs(gauge(r, "ramguard_user_active_runs",
                             "Active runs of each user (uid; \"other\" sums the smallest past "
                             "32 users)")),
      admission_cap_bytes(gauge(r, "ramguard_admission_cap_bytes",
                                "At the last admission: the effective budget and the caps on it "
                                "(cap: effective, node, cgroup; 0 when there is none)")),
      admission_committed_bytes(
          gauge(r, "ramguard_admission_committed_bytes",
                "At the last admission: every active run at max(held, reserved) plus every "
                "unclaimed reservation")),
      admission_refusals_by_cap(prometheus::BuildCounter()
                                    .Name("ramguard_admission_refusals_by_cap_total")
                                    .Help("Refused admissions by the cap that set the effective "
                                          "budget (budget, node, cgroup, user, salvage)")
                                    .Register(r)),
      run_refusals_by_cap(prometheus::BuildCounter()
                              .Name("ramguard_run_refusals_by_cap_total")
                              .Help("Refused run starts by the cap that refused them (runs: "
                                    "control.max_runs; user: "
                                    "admission.max_active_runs_per_user)")
                              .Register(r)),
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
