#pragma once
// The series of each watched target, a run or a watched PID, labelled ramguard_job (the
// training job's name; a watched PID's job is "pid-<PID>", WatchList::job_for_pid) and run_id
// (the run; "pid-<PID>" for a watched PID): two runs of one job are two sets of series.
// Readings, exact peak, phase peaks and durations, round boundaries (the round is a value),
// gaps and verdicts are per run. The series live in the TargetTable under the run id.
//
// Lifecycle: while a target is watched, its state series (up, exited, degraded per reason and,
// for a run, verdict_active per warning kind) are always present with 0 or 1. When the process
// exits, up goes 0 and exited 1 at once and the reading gauges (RSS, memory by kind, swap, last
// reading time) are removed, so Prometheus marks them stale instead of repeating a dead
// process's last value. When a run ends its warnings go 0; when sampling stops the reading
// gauges go too, and the rest of the target's series disappear at the first sweep after the
// retention period. Not thread-safe: the exporter hands it out under its lock.

#include <string>
#include <string_view>
#include <vector>

#include "common/clock.hpp"
#include "model/reading.hpp"
#include "model/verdict.hpp"

namespace ramguard {

struct BoundaryRecord;
struct PhaseRecord;
struct TargetState;
class TargetSeries;
class TargetTable;

class TargetMetrics {
 public:
  explicit TargetMetrics(TargetTable& table);
  TargetMetrics(const TargetMetrics&) = delete;
  TargetMetrics& operator=(const TargetMetrics&) = delete;

  // A reading of the target's process: RSS and its split into anon, file, shmem and swap. A
  // reading proves the process readable again. Ignored once the process has exited.
  void observe_reading(const TargetRef& target, const MemoryReading& reading);
  // A peak candidate: the exported peak is the largest seen since the target was first watched.
  // `exact` when it comes from the kernel high-water mark rather than from samples.
  void observe_peak(const TargetRef& target, std::uint64_t peak_bytes, bool exact);
  // Both at once and what the reading cost the daemon: what every periodic sample brings. The
  // slow-read counter takes the target's running count (never lower than it was).
  void observe_sample(const TargetRef& target, const MemoryReading& reading,
                      std::uint64_t peak_bytes, bool exact, const ReadTiming& timing);
  // Whether the process can be read. readable=false with reason "exited": the process is gone
  // (up 0, exited 1, reading gauges removed). Otherwise a non-empty reason (a short fixed token
  // such as "hwm_reset_denied", "unreadable") sets degraded{reason} 1 until a call with another
  // reason or "".
  void set_target_up(const TargetRef& target, bool readable, std::string_view reason);

  // A closed phase: its peak and duration (a phase still open has neither: ignored).
  void observe_phase(const TargetRef& target, const PhaseRecord& phase);
  // What a run measures: its process, its process tree, or its memory cgroup.
  void observe_scope(const TargetRef& target, std::string_view scope);
  // A round boundary, at its mark and again once settled: the round, the mark's RSS, the floor
  // (the mark's RSS until settled), the floor the growth verdicts judge, and the allocator
  // facts a client sent with the round end (live and kept-free bytes), if any.
  void observe_boundary(const TargetRef& target, const BoundaryRecord& boundary);
  // `from_to` names the configured interval, e.g. "aggregation.end->synchronization.begin".
  void observe_gap(const TargetRef& target, std::string_view from_to, double seconds);
  // Counts the verdict in ramguard_verdicts_total{kind, severity}; a release verdict's
  // severity label is "pass" or "fail", as the reports say. For the kinds that hold while a run
  // is active (warning_kinds()), also sets ramguard_verdict_active.
  void observe_verdict(const TargetRef& target, const Verdict& verdict);
  // The run ended (ended, exited, lost): its warnings no longer hold.
  void run_finished(const TargetRef& target);
  // The kinds exported in ramguard_verdict_active, 0 or 1 for every active run.
  static const std::vector<std::string>& warning_kinds();

  // The target is no longer sampled: its reading gauges go now, the rest after the retention;
  // its job's series (JobSeries) retire with it.
  void retire_target(const TargetRef& target, Instant now);

 private:
  TargetState& state_of(const TargetRef& target);  // with its state series
  void remove_readings(TargetState& state);
  // Every warning of a run's series to 0: it ended, its process exited, or it was watched anew.
  void clear_warnings(TargetState& state);
  void set_reading(TargetState& state, const MemoryReading& reading);
  void set_peak(TargetState& state, std::uint64_t peak_bytes, bool exact);
  void set_timing(TargetState& state, const ReadTiming& timing);
  void set_degraded(TargetState& state, const std::string& reason);

  TargetTable& table_;
  TargetSeries& series_;  // the table's
};

}  // namespace ramguard
