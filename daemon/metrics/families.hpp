#pragma once
// Every metric family ramguard exports, with its name and help text in one place. Names follow
// Prometheus conventions: ramguard_ prefix, base units, _total on counters. Per-target series
// carry ramguard_job (the training job) and run_id (a run, or "pid-<PID>" for a watched PID),
// never Prometheus's own `job`; their number is bounded by the active runs plus the retention.
// Other labels are bounded per target: phase, kind, severity, decision, gap, reason; never a
// round.

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
  prometheus::Family<prometheus::Gauge>& max_targets;
  prometheus::Family<prometheus::Gauge>& targets_folded;

  // Per watched target (labels ramguard_job, run_id).
  prometheus::Family<prometheus::Gauge>& target_rss_bytes;
  prometheus::Family<prometheus::Gauge>& target_memory_bytes;  // + kind: anon, file, shmem
  prometheus::Family<prometheus::Gauge>& target_swap_bytes;
  prometheus::Family<prometheus::Gauge>& target_peak_bytes;
  prometheus::Family<prometheus::Gauge>& target_peak_exact;
  prometheus::Family<prometheus::Gauge>& target_up;
  prometheus::Family<prometheus::Gauge>& target_exited;
  prometheus::Family<prometheus::Gauge>& target_degraded;  // + reason
  prometheus::Family<prometheus::Gauge>& target_last_reading_timestamp_seconds;

  // Per run: phases, round boundaries, gaps between marks.
  prometheus::Family<prometheus::Gauge>& phase_peak_bytes;        // + phase
  prometheus::Family<prometheus::Gauge>& phase_duration_seconds;  // + phase
  prometheus::Family<prometheus::Gauge>& boundary_rss_bytes;
  prometheus::Family<prometheus::Gauge>& boundary_floor_bytes;
  prometheus::Family<prometheus::Gauge>& target_scope_info;
  prometheus::Family<prometheus::Gauge>& boundary_allocator_live_bytes;
  prometheus::Family<prometheus::Gauge>& boundary_allocator_free_bytes;
  prometheus::Family<prometheus::Gauge>& boundary_round;
  prometheus::Family<prometheus::Gauge>& phase_gap_seconds;  // + gap

  // Per job (ramguard_job only): admissions. Per run: verdicts.
  prometheus::Family<prometheus::Counter>& admissions_total;  // + decision
  prometheus::Family<prometheus::Gauge>& admission_headroom_bytes;
  prometheus::Family<prometheus::Counter>& verdicts_total;  // + kind, severity
  prometheus::Family<prometheus::Gauge>& verdict_active;    // + kind

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
