#pragma once
// ramguardd as one object: it owns the parts (sampler, admission, runs, ledger, metrics, the
// control server, upkeep), wires them once, and applies a configuration through one path,
// apply(), at start-up and at every SIGHUP. main.cpp only reads flags and calls open and run.

#include <asio/io_context.hpp>
#include <asio/signal_set.hpp>
#include <memory>
#include <optional>

#include "admission/admission.hpp"
#include "admission/desk.hpp"
#include "app/ticker.hpp"
#include "app/upkeep.hpp"
#include "common/clock.hpp"
#include "config/command_line.hpp"
#include "config/config.hpp"
#include "control/dispatcher.hpp"
#include "control/server.hpp"
#include "fleet/fleet_history.hpp"
#include "metrics/exporter.hpp"
#include "metrics/run_metrics.hpp"
#include "procfs/proc_fs.hpp"
#include "ramguard/base/result.hpp"
#include "runs/admission_sources.hpp"
#include "runs/run_registry.hpp"
#include "runs/watch_list.hpp"
#include "sampling/exit_watcher.hpp"
#include "sampling/sampler.hpp"
#include "store/job_history.hpp"
#include "store/ledger_journal.hpp"
#include "store/state_lock.hpp"
#include "store/store.hpp"
#include "store/store_reader.hpp"

namespace ramguard {

// What tests replace: the clock every part reads and the ticker upkeep runs on. Null: the
// system clock and an asio timer.
struct DaemonSeams {
  const Clock* clock = nullptr;
  Ticker* upkeep_ticker = nullptr;
};

class Daemon {
 public:
  // Start-up in order: the ledger lock before anything reads the database, the metrics
  // listener, the ledger (salvaged if corrupt; without it runs are guarded in memory only),
  // apply(config), the control socket, recovery, TCP. A daemon refused at any step has touched
  // neither the ledger nor the budget; the error names the step. Requests wait in the socket's
  // backlog until run().
  static Result<std::unique_ptr<Daemon>> open(const Config& config, const CommandLine& flags,
                                              DaemonSeams seams = {});
  // Shutdown, in this order (shutdown(), then the members in reverse): stop accepting (the
  // control listeners, sampling, upkeep, signals); the requests waiting in prepare are
  // cancelled (an admission's fleet query drops its waiters, the store reader drops its queued
  // reads and finishes the one in progress); what those left posted to the loop runs; the
  // journal is written; then the server and dispatcher go, the registry, and the store last.
  // So no request's coroutine outlives the server, dispatcher or store it uses.
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Everything a running daemon adopts from a configuration: log level, interval, budget,
  // lease and caps, run parameters, limits, metrics bounds, retention, new watched PIDs. The
  // listeners and on-disk locations are fixed at open (config/reload.hpp says which).
  void apply(const Config& config);
  // SIGHUP: --config read again; a bad file is logged and the running configuration kept.
  void reload();
  // Serves until SIGTERM or SIGINT; returns the exit status.
  int run();
  void stop();

  const Config& config() const { return config_; }
  const Admission& admission() const { return admission_; }
  const Sampler& sampler() const { return sampler_; }
  const WatchList& watches() const { return watches_; }
  const RunRegistry& registry() const { return registry_; }
  std::uint16_t metrics_port() const { return metrics_->port(); }
  asio::io_context& io() { return io_; }

 private:
  Daemon(const Config& config, const CommandLine& flags, DaemonSeams seams,
         std::unique_ptr<StateLock> lock, std::unique_ptr<MetricsExporter> metrics,
         std::optional<FleetSettings> fleet);
  void seed_job_history();
  void show_journal();  // the journal's gauges
  Status listen_and_recover();
  void wait_signal();
  void shutdown();  // the first steps of the order above; once

  Config config_;
  const CommandLine flags_;
  bool applied_ = false;
  std::unique_ptr<StateLock> lock_;
  asio::io_context io_;
  SystemClock system_clock_;
  const Clock& clock_;
  ProcFs procfs_;
  ExitWatcher exits_;  // before the sampler, which follows forks through its connector
  Sampler sampler_;
  Admission admission_;
  RunRegistry registry_;
  WatchList watches_;
  std::unique_ptr<MetricsExporter> metrics_;
  RunMetrics run_metrics_;
  std::unique_ptr<Store> store_;
  // Reports' and comparisons' reads, off the loop; null without a store (or a second
  // connection), and then they read on the loop.
  std::unique_ptr<StoreReader> reader_;
  ProcLoadBaselines baselines_;
  RegistryMachineState machine_;
  AdmissionDesk desk_;
  std::optional<StoreJobHistory> history_;
  std::optional<FleetJobHistory> fleet_history_;
  control::Dispatcher dispatcher_;
  control::ControlServer server_;
  // The store's batch listeners refer to the server and the registry: forgotten (after a last
  // commit) before either goes.
  struct ForgetBatchListeners {
    Store* store = nullptr;
    ~ForgetBatchListeners();
  } forget_batch_listeners_;
  std::unique_ptr<LedgerJournal> journal_;  // with the store
  AsioTicker asio_ticker_;
  Upkeep upkeep_;
  asio::signal_set signals_;
  bool shut_down_ = false;
};

}  // namespace ramguard
