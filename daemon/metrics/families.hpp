#pragma once
// The daemon-wide metric families (prometheus-cpp), with their names and help text. Names
// follow Prometheus conventions: ramguard_ prefix, base units, _total on counters. The
// per-target families (labels ramguard_job and run_id, never Prometheus's own `job`) are in
// target_families.hpp.

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

namespace ramguard {

struct MetricFamilies {
  explicit MetricFamilies(prometheus::Registry& registry);

  // Configuration and global state.
  prometheus::Family<prometheus::Gauge>& build_info;
  prometheus::Family<prometheus::Gauge>& start_time_seconds;
  prometheus::Family<prometheus::Gauge>& budget_bytes;
  prometheus::Family<prometheus::Gauge>& budget_margin_bytes;
  prometheus::Family<prometheus::Gauge>& reserved_bytes;
  prometheus::Family<prometheus::Gauge>& runs_active;
  prometheus::Family<prometheus::Gauge>& store_available;
  prometheus::Family<prometheus::Gauge>& store_writable;
  // The ledger journal: writes accepted while the ledger could not take them (store/).
  prometheus::Family<prometheus::Gauge>& store_journal_writes;
  prometheus::Family<prometheus::Gauge>& store_journal_max_writes;
  prometheus::Family<prometheus::Counter>& store_journal_dropped;
  prometheus::Family<prometheus::Gauge>& max_targets;
  prometheus::Family<prometheus::Gauge>& targets_folded;
  // Each user's share (uid label, bounded: metrics/user_shares.hpp).
  prometheus::Family<prometheus::Gauge>& user_reserved_bytes;
  prometheus::Family<prometheus::Gauge>& user_active_runs;
  // Admission's caps and committed memory at the last decision (docs/admission.md).
  prometheus::Family<prometheus::Gauge>& admission_cap_bytes;
  prometheus::Family<prometheus::Gauge>& admission_committed_bytes;
  prometheus::Family<prometheus::Counter>& admission_refusals_by_cap;
  prometheus::Family<prometheus::Counter>& run_refusals_by_cap;

  // The daemon's own cost.
  prometheus::Family<prometheus::Histogram>& sample_duration_seconds;
  prometheus::Family<prometheus::Gauge>& self_rss_bytes;
  prometheus::Family<prometheus::Gauge>& jemalloc_allocated_bytes;
  prometheus::Family<prometheus::Gauge>& jemalloc_active_bytes;
  prometheus::Family<prometheus::Gauge>& jemalloc_resident_bytes;
  prometheus::Family<prometheus::Gauge>& jemalloc_retained_bytes;
};

// Around the cost of one periodic sample: a statm pread is about 1 us.
prometheus::Histogram::BucketBoundaries sample_duration_buckets();

}  // namespace ramguard
