#pragma once
// The Prometheus exporter. It OBSERVES: the daemon tells it what it read, marked, admitted and
// concluded, and it serves those numbers over HTTP (civetweb, on its own threads).
// It never decides anything and never changes daemon state.
//
// It owns the registry, the HTTP server, one lock and the parts that hold the series, each
// handed out under the lock (metrics/locked.hpp), so every call is thread-safe:
//   daemon()   DaemonSeries   the daemon-wide series (budget, reservations, caps, users, ledger,
//                             own cost)
//   jobs()     JobSeries      each job's admissions and history (label ramguard_job only)
//   targets()  TargetMetrics  each run's and watched PID's series, and their lifecycle
//   table()    TargetTable    which targets have series: bounds, folding, retention, sweep,
//                             job names
// Prometheus's own `job` label stays the scrape's.

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "metrics/daemon_series.hpp"
#include "metrics/job_series.hpp"
#include "metrics/locked.hpp"
#include "metrics/target_metrics.hpp"
#include "metrics/target_table.hpp"
#include "model/endpoint.hpp"
#include "ramguard/base/result.hpp"

namespace prometheus {
class Registry;
}  // namespace prometheus

namespace ramguard {

struct MetricFamilies;
class MetricsHttpServer;

class MetricsExporter {
 public:
  // Listens on ADDRESS (port 0 picks a free port; see port()). One that cannot be listened on
  // (in use, not local) is an Error naming the address and why.
  static Result<std::unique_ptr<MetricsExporter>> start(const Endpoint& address);
  ~MetricsExporter();
  MetricsExporter(const MetricsExporter&) = delete;
  MetricsExporter& operator=(const MetricsExporter&) = delete;

  std::uint16_t port() const;  // the bound port

  // One part under the lock, held until the end of the statement (one part at a time).
  Locked<DaemonSeries> daemon() { return {mutex_, *daemon_}; }
  Locked<JobSeries> jobs() { return {mutex_, *jobs_}; }
  Locked<TargetMetrics> targets() { return {mutex_, *targets_}; }
  Locked<TargetTable> table() { return {mutex_, *table_}; }
  Locked<const TargetTable> table() const { return {mutex_, *table_}; }

 private:
  MetricsExporter();
  // The whole exposition: daemon-wide families, then every target's series.
  void render(std::string& out, const std::function<void(std::string&)>& flush) const;

  mutable std::mutex mutex_;  // guards the parts
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<MetricFamilies> families_;
  std::unique_ptr<DaemonSeries> daemon_;
  std::unique_ptr<TargetTable> table_;
  std::unique_ptr<TargetMetrics> targets_;
  std::unique_ptr<JobSeries> jobs_;
  std::unique_ptr<MetricsHttpServer> server_;
};

}  // namespace ramguard
