#include "app/daemon.hpp"

#include <signal.h>

#include <chrono>
#include <optional>

#include "app/daemon_config.hpp"
#include "app/ledger_check.hpp"
#include "common/log.hpp"
#include "config/describe.hpp"
#include "config/token_file.hpp"
#include "config/values.hpp"
#include "control/settings_from_config.hpp"
#include "runs/params_from_config.hpp"
#include "store/ledger_salvage.hpp"
#include "store/retention.hpp"

namespace ramguard {
namespace {

// The ledger records runs durably and is where recovery reads what was active. Without it runs
// are guarded in memory only. synchronous=NORMAL in WAL mode: a commit is in the kernel before
// the mark is acknowledged, so a daemon crash (kill -9) loses nothing acknowledged; only power
// loss could. FULL would add an fsync (4-8 ms here) to every mark. Checkpoints run on a thread
// of their own, not inside a commit on the event loop.
std::unique_ptr<Store> open_ledger(const Config& config, Admission& admission) {
  StoreOptions options;
  options.sync_every_commit = false;
  options.checkpoint_in_background = true;
  // Room to write the journal when the daemon stops on a full disk (store/ledger_journal.hpp):
  // a run's end and a few hundred marks.
  options.reserve_bytes = 1 << 20;
  options.coalesce_wal_writes = config.store.coalesce_wal_writes;
  std::optional<SalvageReport> salvaged;
  bool emptied = false;
  auto opened = open_or_salvage(config.state_dir, options, salvaged, &emptied);
  if (salvaged) log_salvage(*salvaged);
  // Runs or reservations the old file held may be missing: admission waits a lease.
  std::string unknown = salvaged ? salvaged->unknown_text() : "";
  if (emptied) unknown = "the ledger file was empty (0 bytes)";
  if (!unknown.empty()) {
    admission.hold_for_a_lease(unknown);
    log::warning("admission.held_after_salvage",
                 {{"reason", unknown},
                  {"lease_seconds", std::chrono::duration<double>(admission.lease()).count()},
                  {"effect", "admissions are refused for one lease"}});
  }
  if (opened) return std::move(*opened);
  log::error("store.unavailable",
             {{"reason", opened.error().message}, {"effect", "runs are guarded in memory only"}});
  return nullptr;
}

double seconds(std::chrono::nanoseconds d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

Result<std::unique_ptr<Daemon>> Daemon::open(const Config& config, const CommandLine& flags,
                                             DaemonSeams seams) {
  log::set_level(config.log_level);
  auto lock = StateLock::acquire(config.state_dir);
  if (!lock) {
    log::error("daemon.ledger_locked", {{"reason", lock.error().message}});
    return lock.error();
  }
  auto metrics = MetricsExporter::start(config.metrics.listen);
  if (!metrics) {
    log::error("daemon.metrics_failed", {{"reason", metrics.error().message}});
    return metrics.error();
  }
  std::optional<FleetSettings> fleet;
  if (!config.admission.history.prometheus_url.empty()) {
    auto settings = fleet_settings(config);
    if (!settings) return settings.error();
    fleet = *settings;
  }
  std::unique_ptr<Daemon> daemon(
      new Daemon(config, flags, seams, std::move(*lock), std::move(*metrics), fleet));
  if (auto s = daemon->listen_and_recover(); !s) return s.error();
  return daemon;
}

Daemon::Daemon(const Config& config, const CommandLine& flags, DaemonSeams seams,
               std::unique_ptr<StateLock> lock, std::unique_ptr<MetricsExporter> metrics,
               std::optional<FleetSettings> fleet)
    : config_(config),
      flags_(flags),
      lock_(std::move(lock)),
      clock_(seams.clock != nullptr ? *seams.clock : system_clock_),
      exits_(io_),
      sampler_(io_, procfs_, clock_, config.sampling.interval),
      admission_(config.budget_bytes, config.margin_bytes, config.admission.lease, clock_),
      registry_(io_, clock_, sampler_, exits_, admission_, run_params(config)),
      watches_(sampler_, exits_, clock_, run_params(config).watch_peak_refresh_ticks),
      metrics_(std::move(metrics)),
      run_metrics_(*metrics_),
      store_(open_ledger(config, admission_)),
      baselines_(procfs_, registry_),
      machine_(procfs_, registry_),
      desk_(admission_, baselines_, machine_, desk_settings(config)),
      dispatcher_(registry_, admission_, desk_, machine_, store_.get(), config.control.peers_read),
      server_(io_, dispatcher_, control::server_limits(config), RAMGUARD_VERSION),
      forget_batch_listeners_{store_.get()},
      journal_(store_ ? std::make_unique<LedgerJournal>(*store_, config.store.journal_max_writes)
                      : nullptr),
      asio_ticker_(io_),
      upkeep_(clock_, seams.upkeep_ticker != nullptr ? *seams.upkeep_ticker : asio_ticker_,
              {registry_, sampler_, *metrics_, store_.get(), journal_.get()},
              config.store.retention),
      signals_(io_, SIGTERM, SIGINT, SIGHUP) {
  if (ProcEvents* events = exits_.proc_events()) sampler_.follow_forks(*events);
  // Metrics observe runs and watched targets.
  registry_.add_observer(&run_metrics_);
  watches_.set_observer(&run_metrics_);
  metrics_->daemon()->set_store_available(store_ != nullptr);
  desk_.set_observer(&run_metrics_);   // admissions reach the metrics as runs do
  dispatcher_.set_group_commit(true);  // the server flushes before each reply
  if (store_) {
    store_->set_writable_listener([this](bool writable) {
      metrics_->daemon()->set_store_writable(writable);
      // Writable again (whichever write noticed): store the reservations admitted meanwhile
      // right after the current handler, so a restart does not forget them. Posted, because
      // this runs inside the store's commit.
      if (writable) asio::post(io_, [this] { registry_.sync_reservations(); });
    });
    // Group commit: writes no request waits for (progress, exits, recovery) are committed at
    // the end of their turn; a rolled-back batch marks its runs' ledgers incomplete.
    store_->set_batch_opened_listener([this] { server_.schedule_commit(); });
    // A rolled-back batch loses nothing: the journal takes its writes back. Said once, then at
    // most once a minute while commits keep failing (a full disk fails one a second).
    store_->set_batch_lost_listener(
        [this, last_said = std::optional<std::chrono::steady_clock::time_point>(),
         unsaid = std::uint64_t{0}](const std::vector<std::string>& runs,
                                    const Error& error) mutable {
          for (const std::string& id : runs) registry_.store_lost(id);
          const auto now = std::chrono::steady_clock::now();
          ++unsaid;
          if (last_said && now - *last_said < std::chrono::minutes(1)) return;
          log::warning("store.batch_rolled_back",
                       {{"runs", runs.size()},
                        {"batches", unsaid},
                        {"reason", error.message},
                        {"effect",
                         "its writes wait in the journal and are written in order "
                         "when the ledger takes writes; replies say stored:false"}});
          last_said = now;
          unsaid = 0;
        });
    dispatcher_.set_unstored_note([this] { return journal_->unstored_note(); });
    if (auto reader = StoreReader::start(store_->path())) {
      reader_ = std::move(*reader);
      dispatcher_.set_reader(reader_.get());
    } else {
      log::warning("store.reader_unavailable",
                   {{"reason", reader.error().message},
                    {"effect", "reports and comparisons read the ledger on the event loop"}});
    }
    registry_.add_observer(journal_.get());
    // The journal's gauges follow it at once, from the first scrape on.
    journal_->set_changed_listener([this] { show_journal(); });
    show_journal();
    // Admission reads the ledger's history, then the fleet's behind it (fleet/): asked on the
    // loop, bounded, cached.
    desk_.set_history(&history_.emplace(*store_));
  }
  if (fleet) {
    desk_.set_history(&fleet_history_.emplace(io_, history_ ? &*history_ : nullptr, *fleet));
    log::info("admission.fleet_history", {{"url", config.admission.history.prometheus_url},
                                          {"lookback", format_duration(fleet->lookback)},
                                          {"timeout", format_duration(fleet->timeout)}});
  }
  apply(config);
  seed_job_history();
}

Daemon::ForgetBatchListeners::~ForgetBatchListeners() {
  if (store == nullptr) return;
  (void)store->commit_batch();
  store->set_batch_opened_listener({});
  store->set_batch_lost_listener({});
}

Daemon::~Daemon() {
  shutdown();
}

void Daemon::shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  // 1. Stop accepting: no new connection, tick or signal starts work.
  server_.stop();
  sampler_.stop();
  upkeep_.stop();
  signals_.cancel();
  // 2. Requests waiting in prepare: dropped with their requests while the server they belong to
  // is still here (a reads' job in progress finishes and posts its request's resumption).
  if (fleet_history_) fleet_history_->drop_waiting();
  reader_.reset();
  // 3. What is posted to the loop runs now, not when the io_context is destroyed after the
  // server, the dispatcher and the store (bounded: a client may keep a session busy).
  io_.restart();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (std::chrono::steady_clock::now() < until && io_.poll() > 0) {
  }
  // 4. Before the store and the journal go: what the journal holds is written, or said dropped.
  if (journal_) journal_->write_at_stop();
}

void Daemon::show_journal() {
  metrics_->daemon()->set_store_journal(journal_->pending_writes(), journal_->max_pending_writes(),
                                        journal_->dropped_writes());
}

// The jobs' history from the ledger, so a restarted node exports it before its next run.
void Daemon::seed_job_history() {
  if (!store_) return;
  auto facts = store_->job_facts(config_.metrics.max_targets);
  if (!facts) {
    log::warning("metrics.job_history", {{"reason", facts.error().message}});
    return;
  }
  for (const JobFacts& f : *facts) {
    metrics_->jobs()->seed(f.job, f.owner_uid, f.peak_bytes, f.runs, clock_.now());
  }
}

Status Daemon::listen_and_recover() {
  std::optional<gid_t> socket_group;
  if (!config_.control.socket_group.empty()) {
    // Looked up again: the group database may have changed since the configuration was read.
    auto gid = parse_socket_group(config_.control.socket_group);
    if (!gid) return Error{"control.socket_group: " + gid.error().message};
    socket_group = *gid;
  }
  if (auto s =
          server_.listen_unix(config_.control.socket, config_.control.socket_mode, socket_group);
      !s) {
    return s;
  }
  if (journal_) {
    registry_.recover(*journal_);
    apply_retention_logged(*store_, config_.store.retention, clock_.now().wall);
  }
  if (config_.control.tcp.enabled) {
    auto token = read_token_file(config_.control.tcp.token_file);
    if (!token) return token.error();
    if (auto s = server_.listen_tcp(config_.control.tcp.listen, *token); !s) return s;
  }
  return ok_status();
}

int Daemon::run() {
  sampler_.start();
  upkeep_.start();
  wait_signal();
  log::info("daemon.ready", {{"version", RAMGUARD_VERSION},
                             {"socket", config_.control.socket},
                             {"metrics_port", static_cast<unsigned>(metrics_->port())},
                             {"state_dir", config_.state_dir},
                             {"store", store_ != nullptr},
                             {"store_writable", store_ != nullptr && store_->writable()},
                             {"lock", lock_->path().string()},
                             {"budget_bytes", config_.budget_bytes},
                             {"interval_seconds", seconds(config_.sampling.interval)}});
  io_.run();
  log::info("daemon.stopped", {});
  return 0;
}

void Daemon::stop() {
  server_.stop();
  sampler_.stop();
  upkeep_.stop();
  signals_.cancel();
  io_.stop();
}

void Daemon::wait_signal() {
  signals_.async_wait([this](const asio::error_code& ec, int signo) {
    if (ec) return;
    if (signo != SIGHUP) {
      log::info("daemon.stopping", {{"signal", signo}, {"active_runs", registry_.active_runs()}});
      stop();
      return;
    }
    reload();
    wait_signal();
  });
}

}  // namespace ramguard
