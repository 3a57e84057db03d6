#pragma once
// The Prometheus exporter. It OBSERVES: the daemon tells it what it read, marked, admitted and
// concluded, and it serves those numbers over HTTP (prometheus-cpp's Exposer, its own threads).
// It never decides anything and never changes daemon state. All calls are thread-safe.
//
// Series per job (label `job`; `--watch PID` targets without a run use job_for_pid(PID)):
// readings, exact peak, phase peaks and durations, round boundaries (the round is a value),
// gaps, admissions and verdicts. A finished run's job is retired with retire_job() and its
// series disappear at the first sweep() after the retention period.

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/clock.hpp"
#include "common/result.hpp"
#include "model/reading.hpp"
#include "model/verdict.hpp"

namespace prometheus {
class Exposer;
class Registry;
}  // namespace prometheus

namespace ramguard {

struct MetricFamilies;
class JobSeries;
struct GlobalSeries;

inline constexpr std::chrono::nanoseconds kDefaultMetricsRetention = std::chrono::minutes(15);

class MetricsExporter {
 public:
  // Listens on "HOST:PORT" (port 0 picks a free port; see port()). An invalid address, or one
  // that cannot be listened on (in use, not local), is an Error naming the address and why.
  static Result<std::unique_ptr<MetricsExporter>> start(const std::string& listen_host_port);
  ~MetricsExporter();
  MetricsExporter(const MetricsExporter&) = delete;
  MetricsExporter& operator=(const MetricsExporter&) = delete;

  std::uint16_t port() const;                 // the bound port
  static std::string job_for_pid(pid_t pid);  // "pid-<PID>"

  // Configuration and global state.
  void set_budget(std::uint64_t budget_bytes, std::uint64_t margin_bytes);
  void set_reserved_bytes(std::uint64_t total_bytes);
  void set_runs_active(std::size_t runs);
  void set_store_available(bool available);
  void set_store_writable(bool writable);

  // A reading of the job's process: RSS and its split; swap only from mark readings (periodic
  // statm readings do not carry it).
  void observe_reading(std::string_view job, const MemoryReading& reading);
  // A peak candidate: the exported peak is the largest seen since the job was first watched.
  // `exact` when it comes from the kernel high-water mark rather than from samples.
  void observe_peak(std::string_view job, std::uint64_t peak_bytes, bool exact);
  // Whether the process can be read; a non-empty reason (a short fixed token such as
  // "hwm_reset_denied") marks a degraded measurement until a call with another reason or "".
  void set_target_up(std::string_view job, bool readable, std::string_view degraded_reason);

  void observe_phase(std::string_view job, std::string_view phase, std::uint64_t peak_bytes,
                     double duration_seconds);
  void observe_boundary(std::string_view job, std::uint32_t round, std::uint64_t rss_bytes,
                        std::uint64_t floor_bytes);
  // `from_to` names the configured interval, e.g. "aggregation.end->synchronization.begin".
  void observe_gap(std::string_view job, std::string_view from_to, double seconds);
  // `headroom_bytes`: budget - margin - baseline - reserved - estimate; negative when refused.
  void observe_admission(std::string_view job, bool admitted, std::int64_t headroom_bytes);
  void observe_verdict(std::string_view job, std::string_view kind, Severity severity);
  void set_active_warning(std::string_view job, std::string_view kind, bool active);

  // The daemon's own cost.
  void observe_sample_duration(double seconds);
  // Own RSS from `proc_self_statm` (normally /proc/self/statm) and jemalloc's statistics when
  // jemalloc is linked. An unreadable file is an Error; the previous values stay.
  Status update_self(const std::filesystem::path& proc_self_statm);
  static bool jemalloc_available();

  // Retention of finished runs' series.
  void set_retention(std::chrono::nanoseconds retention);
  void retire_job(std::string_view job, Instant now);
  std::size_t sweep(Instant now);  // returns the number of jobs whose series were removed
  bool has_job(std::string_view job) const;

 private:
  MetricsExporter();

  mutable std::mutex mutex_;  // guards jobs_ and the lazily created global series
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<MetricFamilies> families_;
  std::unique_ptr<JobSeries> jobs_;
  std::unique_ptr<GlobalSeries> globals_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::chrono::nanoseconds retention_ = kDefaultMetricsRetention;
};

}  // namespace ramguard
