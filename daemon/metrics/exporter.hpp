#pragma once
// The Prometheus exporter. It OBSERVES: the daemon tells it what it read, marked, admitted and
// concluded, and it serves those numbers over HTTP (civetweb, on its own threads).
// It never decides anything and never changes daemon state. All calls are thread-safe.
//
// Series per target, labelled ramguard_job (the training job's name; `--watch PID` targets
// without a run use job_for_pid(PID)) and run_id (the run; "pid-<PID>" for a watched PID): two
// runs of one job are two sets of series. Prometheus's own `job` label stays the scrape's.
// Readings, exact peak, phase peaks and durations, round boundaries (the round is a value),
// gaps and verdicts are per run; admissions per job (ramguard_job only).
//
// Lifecycle: while a target is watched, its state series (up, exited, degraded per reason and,
// for a run, verdict_active per warning kind) are always present with 0 or 1. When the process
// exits, up goes 0 and exited 1 at once and the reading gauges (RSS, memory by kind, swap, last
// reading time) are removed, so Prometheus marks them stale instead of repeating a dead
// process's last value. When a run ends its warnings go 0; when sampling stops the reading
// gauges go too, and the rest of the target's series disappear at the first sweep() after the
// retention period.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.hpp"
#include "config/config.hpp"
#include "model/endpoint.hpp"
#include "model/reading.hpp"
#include "model/verdict.hpp"
#include "ramguard/base/result.hpp"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace ramguard {

struct MetricFamilies;
class MetricsHttpServer;
class TargetSeries;
struct TargetState;
struct GlobalSeries;
class UserShareSeries;

inline constexpr std::chrono::nanoseconds kDefaultMetricsRetention = std::chrono::minutes(15);

class MetricsExporter {
 public:
  // Listens on ADDRESS (port 0 picks a free port; see port()). One that cannot be listened on
  // (in use, not local) is an Error naming the address and why.
  static Result<std::unique_ptr<MetricsExporter>> start(const Endpoint& address);
  ~MetricsExporter();
  MetricsExporter(const MetricsExporter&) = delete;
  MetricsExporter& operator=(const MetricsExporter&) = delete;

  std::uint16_t port() const;                 // the bound port
  static std::string job_for_pid(pid_t pid);  // "pid-<PID>"

  // Configuration and global state.
  void set_budget(std::uint64_t budget_bytes, std::uint64_t margin_bytes);
  void set_reserved_bytes(std::uint64_t total_bytes);
  // One admission's caps (0: none) and committed memory; `refused_by` names the cap of a
  // refusal ("budget", "node", "cgroup"), empty when admitted.
  void set_admission_caps(std::uint64_t effective_bytes, std::uint64_t node_cap_bytes,
                          std::uint64_t cgroup_limit_bytes, std::uint64_t committed_bytes,
                          std::string_view refused_by);
  void set_runs_active(std::size_t runs);
  // A run start refused by a cap ("runs" or "user"): ramguard_run_refusals_by_cap_total.
  void observe_run_refusal(std::string_view cap);
  // Each user's share, by UID: the bytes its reservations hold (claimed or not) and its active
  // runs. A user with neither has no series; past kMaxUserSeries users the smallest shares
  // are summed under uid="other", so the series count stays bounded.
  void set_user_reserved_bytes(const std::map<std::uint32_t, std::uint64_t>& by_uid);
  void set_user_active_runs(const std::map<std::uint32_t, std::uint64_t>& by_uid);
  void set_store_available(bool available);
  void set_store_writable(bool writable);
  // The ledger journal's size, bound and drops since the start (a running total).
  void set_store_journal(std::size_t writes, std::size_t max_writes, std::uint64_t dropped_total);

  // A reading of the target's process: RSS and its split into anon, file, shmem and swap. A
  // reading proves the process readable again.
  // Ignored once the process has exited.
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

  void observe_phase(const TargetRef& target, std::string_view phase, std::uint64_t peak_bytes,
                     double duration_seconds);
  // What a run measures: its process, its process tree, or its memory cgroup.
  void observe_scope(const TargetRef& target, std::string_view scope);
  // Allocator facts a client sent with a round end: live and kept-free bytes.
  void observe_allocator(const TargetRef& target, std::uint64_t live_bytes,
                         std::uint64_t free_bytes);
  // counted_floor_bytes: the floor the growth verdicts judge (BoundaryRecord::counted_floor_bytes).
  void observe_boundary(const TargetRef& target, std::uint32_t round, std::uint64_t rss_bytes,
                        std::uint64_t floor_bytes, std::uint64_t counted_floor_bytes);
  // `from_to` names the configured interval, e.g. "aggregation.end->synchronization.begin".
  void observe_gap(const TargetRef& target, std::string_view from_to, double seconds);
  // `headroom_bytes`: budget - margin - baseline - reserved - estimate; negative when refused.
  // `owner_uid`: who asked (a job's admission series count against its first asker's cap).
  void observe_admission(std::string_view job, std::uint32_t owner_uid, bool admitted,
                         std::int64_t headroom_bytes);
  // A run of `job` owned by `owner_uid` ended (state ended) with this measured peak; the job's
  // series (ramguard_job_peak_bytes, _peak_estimate_ratio, _runs) keep its history on this node.
  // estimate_bytes 0: the run claimed no reservation (no ratio).
  void observe_job_run(std::string_view job, std::uint32_t owner_uid, std::uint64_t peak_bytes,
                       std::uint64_t estimate_bytes);
  // At start, from the ledger: the job's peak and runs counted so far (no ratio), retired at
  // `now` like a finished run's series, so they are scraped for the retention period and give
  // way first when targets are many; the job's next run revives them.
  void seed_job(std::string_view job, std::uint32_t owner_uid, std::uint64_t peak_bytes,
                std::uint64_t runs, Instant now);
  // Counts the verdict in ramguard_verdicts_total{kind, severity}; a release verdict's
  // severity label is "pass" or "fail", as the reports say. For the kinds that hold while a run
  // is active (warning_kinds()), also sets ramguard_verdict_active.
  void observe_verdict(const TargetRef& target, const Verdict& verdict);
  // The run ended (ended, exited, lost): its warnings no longer hold.
  void run_finished(const TargetRef& target);
  // The kinds exported in ramguard_verdict_active, 0 or 1 for every active run.
  static const std::vector<std::string>& warning_kinds();

  // The daemon's own cost.
  void observe_sample_duration(double seconds);
  // Own RSS from `proc_self_statm` (normally /proc/self/statm) and jemalloc's statistics when
  // jemalloc is linked. An unreadable file is an Error; the previous values stay.
  Status update_self(const std::filesystem::path& proc_self_statm);
  static bool jemalloc_available();

  // Targets with series of their own (metrics.max_targets); new ones past it fold into "other".
  void set_max_targets(std::size_t max_targets);
  // metrics.max_targets_per_user: live targets one UID other than root may hold (0: no cap).
  void set_max_targets_per_user(std::size_t max_targets);
  // metrics.job_names: series made from now on label their job so (plain, hash or omit).
  void set_job_names(JobNames job_names);
  // The ramguard_job label for `job` under `mode`: the name, "h-" + 12 hex digits of its 64-bit
  // FNV-1a hash (stable across nodes and restarts, so dashboards can still group), or "".
  static std::string job_label(std::string_view job, JobNames mode);

  // Retention of finished runs' series.
  void set_retention(std::chrono::nanoseconds retention);
  // The target is no longer sampled: its reading gauges go now, the rest after the retention.
  void retire_target(const TargetRef& target, Instant now);
  std::size_t sweep(Instant now);  // returns the number of targets whose series were removed
  bool has_target(std::string_view run_id) const;

 private:
  MetricsExporter();
  TargetState& state_of(const TargetRef& target);  // with its state series
  // The target's series, folded into "other" past the bound (counted and logged).
  TargetState& target_state(std::string_view key, const std::map<std::string, std::string>& labels,
                            std::uint32_t owner_uid);
  // The whole exposition: daemon-wide families, then every target's series.
  void render(std::string& out, const std::function<void(std::string&)>& flush) const;
  void remove_readings(TargetState& state);
  // Every warning of a run's series to 0: it ended, its process exited, or it was revived.
  void clear_warnings(TargetState& state);
  void set_reading(TargetState& state, const MemoryReading& reading);
  void set_peak(TargetState& state, std::uint64_t peak_bytes, bool exact);
  void set_timing(TargetState& state, const ReadTiming& timing);
  void set_degraded(TargetState& state, const std::string& reason);

  mutable std::mutex mutex_;  // guards targets_ and the lazily created global series
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<MetricFamilies> families_;
  std::unique_ptr<TargetSeries> targets_;
  std::unique_ptr<GlobalSeries> globals_;
  std::unique_ptr<MetricsHttpServer> server_;
  std::unique_ptr<UserShareSeries> user_reserved_, user_runs_;
  std::chrono::nanoseconds retention_ = kDefaultMetricsRetention;
  JobNames job_names_ = JobNames::kPlain;
};

}  // namespace ramguard
