#include "metrics/target_metrics.hpp"

#include <algorithm>

#include "metrics/job_label.hpp"
#include "metrics/target_table.hpp"
#include "model/ledger.hpp"
#include "ramguard/base/verdict_rank.hpp"

namespace ramguard {

namespace {

constexpr const char* kExitedReason = "exited";
// Degraded reasons present with 0 from the start, so rules and dashboards tell "fine" from
// "missing"; other reasons appear when first set.
constexpr const char* kKnownDegradedReasons[] = {"hwm_reset_denied", "unreadable"};

bool is_run(const TargetRef& target) {
  return target.run_id != target.job;  // a watched PID is "pid-<PID>" for both
}

std::string target_key(const TargetRef& target) {
  return std::string(target.run_id);
}

double bytes(std::uint64_t value) {
  return static_cast<double>(value);
}

}  // namespace

TargetMetrics::TargetMetrics(TargetTable& table) : table_(table), series_(table.series()) {}

const std::vector<std::string>& TargetMetrics::warning_kinds() {
  static const std::vector<std::string> kinds = {verdict_kind::kOverBudget, verdict_kind::kHeadroom,
                                                 verdict_kind::kRunaway,
                                                 verdict_kind::kGrowthWarning, verdict_kind::kLeak};
  return kinds;
}

TargetState& TargetMetrics::state_of(const TargetRef& target) {
  // The periodic path: one lookup, no allocation.
  if (TargetState* known = series_.find(target.run_id); known != nullptr && known->state_series)
    return *known;
  // A watched PID's "job" is its "pid-N" (its run_id too): no job name to hide, kept plain.
  const bool watched = target.job == target.run_id;
  Labels labels{
      {kJobLabel, watched ? std::string(target.job) : job_label(target.job, table_.job_names())},
      {kRunLabel, std::string(target.run_id)}};
  TargetState& state = table_.entry(target_key(target), labels, target.owner_uid);
  if (!state.state_series) {
    state.state_series = true;
    series_.metric(state, TargetFamily::kUp) = 1;
    series_.metric(state, TargetFamily::kExited) = 0;
    for (const char* reason : kKnownDegradedReasons) {
      series_.metric(state, TargetFamily::kDegraded, {{"reason", reason}}) = 0;
    }
    if (is_run(target)) clear_warnings(state);
  }
  return state;
}

void TargetMetrics::remove_readings(TargetState& state) {
  series_.remove_metric(state, TargetFamily::kRssBytes);
  for (const char* kind : {"anon", "file", "shmem"}) {
    series_.remove_metric(state, TargetFamily::kMemoryBytes, {{"kind", kind}});
  }
  if (state.kernel_series) {
    series_.remove_metric(state, TargetFamily::kMemoryBytes, {{"kind", "kernel"}});
    state.kernel_series = false;
  }
  series_.remove_metric(state, TargetFamily::kSwapBytes);
  series_.remove_metric(state, TargetFamily::kCountedBytes);
  series_.remove_metric(state, TargetFamily::kLastReadingTimestampSeconds);
  series_.remove_metric(state, TargetFamily::kReadSeconds);
  if (state.pss_read_seconds != 0) {
    series_.remove_metric(state, TargetFamily::kPssReadSeconds);
    state.pss_read_seconds = 0;
  }
}

void TargetMetrics::set_degraded(TargetState& state, const std::string& reason) {
  if (reason == state.degraded_reason) return;
  if (!state.degraded_reason.empty()) {
    series_.metric(state, TargetFamily::kDegraded, {{"reason", state.degraded_reason}}) = 0;
  }
  state.degraded_reason = reason;
  if (!reason.empty()) {
    series_.metric(state, TargetFamily::kDegraded, {{"reason", reason}}) = 1;
  }
}

void TargetMetrics::observe_reading(const TargetRef& target, const MemoryReading& reading) {
  set_reading(state_of(target), reading);
}

void TargetMetrics::observe_peak(const TargetRef& target, std::uint64_t peak_bytes, bool exact) {
  set_peak(state_of(target), peak_bytes, exact);
}

void TargetMetrics::observe_sample(const TargetRef& target, const MemoryReading& reading,
                                   std::uint64_t peak_bytes, bool exact, const ReadTiming& timing) {
  TargetState& t = state_of(target);
  set_reading(t, reading);
  set_peak(t, peak_bytes, exact);
  set_timing(t, timing);
}

void TargetMetrics::set_timing(TargetState& t, const ReadTiming& timing) {
  if (t.exited) return;
  TargetSeries::hot(t, HotSeries::kReadSeconds) = timing.last_seconds;
  // A counter never goes back, even in "other", which folded targets share.
  double& slow = TargetSeries::hot(t, HotSeries::kSlowReads);
  slow = std::max(slow, static_cast<double>(timing.slow_reads));
  // A new PSS sum comes once a round: only then the (allocating) series lookup.
  if (timing.last_pss_seconds != t.pss_read_seconds) {
    t.pss_read_seconds = timing.last_pss_seconds;
    series_.metric(t, TargetFamily::kPssReadSeconds) = timing.last_pss_seconds;
  }
}

void TargetMetrics::set_reading(TargetState& t, const MemoryReading& reading) {
  if (t.exited) return;  // a dead process has no current value
  if (!t.readable) {
    // A reading proves the process readable again.
    t.readable = true;
    series_.metric(t, TargetFamily::kUp) = 1;
    if (t.degraded_reason == "unreadable") set_degraded(t, "");
  }
  TargetSeries::hot(t, HotSeries::kRss) = bytes(reading.rss_bytes);
  TargetSeries::hot(t, HotSeries::kAnon) = bytes(reading.anon_bytes);
  // Every reading, periodic or at a mark, splits file, shmem and swap the same way (status or
  // memory.stat): the series say what the reading says.
  TargetSeries::hot(t, HotSeries::kFile) = bytes(reading.file_bytes);
  TargetSeries::hot(t, HotSeries::kShmem) = bytes(reading.shmem_bytes);
  TargetSeries::hot(t, HotSeries::kSwap) = bytes(reading.swap_bytes);
  // The figure the verdicts judge, as they read it.
  TargetSeries::hot(t, HotSeries::kCounted) = bytes(reading.counted_bytes());
  // Only cgroups have kernel memory to show: no zero series for every process.
  if (reading.kernel_bytes > 0 || t.kernel_series) {
    t.kernel_series = true;
    TargetSeries::hot(t, HotSeries::kKernel) = bytes(reading.kernel_bytes);
  }
  TargetSeries::hot(t, HotSeries::kLastReading) =
      std::chrono::duration<double>(reading.at.wall).count();
}

void TargetMetrics::set_peak(TargetState& t, std::uint64_t peak_bytes, bool exact) {
  const double peak = bytes(peak_bytes);
  double& peak_gauge = TargetSeries::hot(t, HotSeries::kPeak);
  double& exact_gauge = TargetSeries::hot(t, HotSeries::kPeakExact);
  if (peak > t.peak_bytes) {
    t.peak_bytes = peak;
    peak_gauge = peak;
    exact_gauge = exact ? 1 : 0;
  } else if (peak == t.peak_bytes && exact) {
    exact_gauge = 1;  // the same peak, now confirmed by the high-water mark
  }
}

void TargetMetrics::set_target_up(const TargetRef& target, bool readable, std::string_view reason) {
  if (readable) {
    // A target watched again after it exited (the same watched PID number): start afresh.
    if (TargetState* old = series_.find(target_key(target)); old != nullptr && old->exited) {
      series_.remove(target_key(target));
    }
  }
  TargetState& t = state_of(target);
  if (!readable && reason == kExitedReason) {
    t.exited = true;
    t.readable = false;
    series_.metric(t, TargetFamily::kUp) = 0;
    series_.metric(t, TargetFamily::kExited) = 1;
    set_degraded(t, "");
    remove_readings(t);
    // A dead process holds no warning: only the verdict counters remember.
    if (is_run(target)) clear_warnings(t);
    return;
  }
  if (t.exited) return;
  t.readable = readable;
  series_.metric(t, TargetFamily::kUp) = readable ? 1 : 0;
  set_degraded(t, reason.empty() ? std::string() : series_.bounded_value(t, "reason", reason));
}

void TargetMetrics::observe_phase(const TargetRef& target, const PhaseRecord& phase) {
  if (!phase.end) return;
  TargetState& t = state_of(target);
  const Labels labels{{"phase", series_.bounded_value(t, "phase", phase.phase)}};
  series_.metric(t, TargetFamily::kPhasePeakBytes, labels) = bytes(phase.peak_bytes);
  series_.metric(t, TargetFamily::kPhaseDurationSeconds, labels) =
      seconds_between(phase.begin, *phase.end);
}

void TargetMetrics::observe_boundary(const TargetRef& target, const BoundaryRecord& boundary) {
  TargetState& t = state_of(target);
  series_.metric(t, TargetFamily::kBoundaryRound) = boundary.round;
  series_.metric(t, TargetFamily::kBoundaryRssBytes) = bytes(boundary.reading.rss_bytes);
  // At the mark the floor is the mark's RSS; settled, the lowest RSS of the settle window.
  series_.metric(t, TargetFamily::kBoundaryFloorBytes) = bytes(boundary.floor_bytes);
  series_.metric(t, TargetFamily::kBoundaryCountedFloorBytes) =
      bytes(boundary.counted_floor_bytes());
  if (boundary.allocator) {
    series_.metric(t, TargetFamily::kBoundaryAllocatorLiveBytes) =
        bytes(boundary.allocator->allocated_bytes);
    series_.metric(t, TargetFamily::kBoundaryAllocatorFreeBytes) =
        bytes(boundary.allocator->retained_bytes);
  }
}

void TargetMetrics::observe_scope(const TargetRef& target, std::string_view scope) {
  TargetState& t = state_of(target);
  series_.metric(t, TargetFamily::kScopeInfo, {{"scope", std::string(scope)}}) = 1;
}

void TargetMetrics::observe_gap(const TargetRef& target, std::string_view from_to, double seconds) {
  TargetState& t = state_of(target);
  series_.metric(t, TargetFamily::kPhaseGapSeconds,
                 {{"gap", series_.bounded_value(t, "gap", from_to)}}) = seconds;
}

void TargetMetrics::observe_verdict(const TargetRef& target, const Verdict& verdict) {
  TargetState& t = state_of(target);
  const std::string kind = series_.bounded_value(t, "kind", verdict.kind);
  // A release either passed or failed: say so, as reports do, rather than a severity.
  const std::string severity =
      verdict.kind == verdict_kind::kRelease
          ? release_outcome(verdict.passed, severity_name(verdict.severity),
                            verdict.figures.contains("not_verified"))
          : severity_name(verdict.severity);
  series_.metric(t, TargetFamily::kVerdictsTotal, {{"kind", kind}, {"severity", severity}}) += 1;
  const auto& kinds = warning_kinds();
  if (std::find(kinds.begin(), kinds.end(), verdict.kind) == kinds.end()) return;
  if (verdict.severity == Severity::kInfo && !verdict.cleared) return;
  const bool holds = !verdict.cleared && !verdict.passed && !t.finished && !t.exited;
  series_.metric(t, TargetFamily::kVerdictActive, {{"kind", kind}}) = holds ? 1 : 0;
}

void TargetMetrics::run_finished(const TargetRef& target) {
  TargetState& t = state_of(target);
  t.finished = true;
  clear_warnings(t);
}

void TargetMetrics::clear_warnings(TargetState& t) {
  for (const std::string& kind : warning_kinds()) {
    series_.metric(t, TargetFamily::kVerdictActive, {{"kind", kind}}) = 0;
  }
}

void TargetMetrics::retire_target(const TargetRef& target, Instant now) {
  TargetState* t = series_.find(target_key(target));
  if (t == nullptr) {
    table_.forget_folded(target_key(target));
    return;
  }
  // Not sampled any more: no current value. An exited target keeps up 0 and exited 1 until
  // the retention ends; one that is merely no longer watched has no state to claim.
  remove_readings(*t);
  if (!t->exited) {
    series_.remove_metric(*t, TargetFamily::kUp);
    for (const char* reason : kKnownDegradedReasons) {
      series_.remove_metric(*t, TargetFamily::kDegraded, {{"reason", reason}});
    }
    if (!t->degraded_reason.empty()) {
      series_.remove_metric(*t, TargetFamily::kDegraded, {{"reason", t->degraded_reason}});
    }
  }
  series_.retire(target_key(target), now.monotonic);
  // The job's admission series go with its runs (a new admission brings them back).
  series_.retire(TargetTable::job_key(target.job), now.monotonic);
}

}  // namespace ramguard
