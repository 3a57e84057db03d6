// ramguardd: flags, wiring and the io_context. Everything else lives in the modules.
#include <signal.h>

#include <asio.hpp>
#include <cstdio>
#include <iostream>

#include "admission/admission.hpp"
#include "admission/desk.hpp"
#include "common/log.hpp"
#include "config/auto_budget.hpp"
#include "config/command_line.hpp"
#include "config/describe.hpp"
#include "config/load.hpp"
#include "config/paths.hpp"
#include "config/reload.hpp"
#include "config/token_file.hpp"
#include "config/values.hpp"
#include "control/dispatcher.hpp"
#include "control/protobuf_log.hpp"
#include "control/server.hpp"
#include "control/settings_from_config.hpp"
#include "fleet/fleet_history.hpp"
#include "metrics/exporter.hpp"
#include "metrics/run_metrics.hpp"
#include "procfs/proc_fs.hpp"
#include "runs/admission_sources.hpp"
#include "runs/params_from_config.hpp"
#include "runs/run_registry.hpp"
#include "runs/watch_list.hpp"
#include "sampling/exit_watcher.hpp"
#include "sampling/sampler.hpp"
#include "store/job_history.hpp"
#include "store/ledger_journal.hpp"
#include "store/ledger_salvage.hpp"
#include "store/retention.hpp"
#include "store/state_lock.hpp"
#include "store/store.hpp"

namespace ramguard {
namespace {

// What a watched PID is watched as: its process (""), its tree or its memory cgroup.
Scope watch_scope(const Config& config, pid_t pid) {
  const auto it = config.watch_scopes.find(pid);
  return it == config.watch_scopes.end() ? Scope::kProcess : it->second;
}

double seconds(std::chrono::nanoseconds d) {
  return std::chrono::duration<double>(d).count();
}

// A corrupt ledger was moved aside and salvaged: what came over and what did not, one line
// each, so the loss is on record without opening the old file.
void log_salvage(const SalvageReport& report) {
  log::error("store.ledger_salvaged", {{"reason", report.reason},
                                       {"moved_to", report.moved_to.string()},
                                       {"runs", report.copied("runs")},
                                       {"marks", report.copied("marks")},
                                       {"boundaries", report.copied("boundaries")},
                                       {"reservations", report.copied("reservations")},
                                       {"lossless", report.lossless()}});
  for (const auto& table : report.tables) {
    if (table.refused == 0 && table.unreadable == 0) continue;
    log::warning("store.salvage_lost", {{"table", table.name},
                                        {"copied", table.copied},
                                        {"refused", table.refused},
                                        {"unreadable", table.unreadable}});
  }
  for (const auto& loss : report.losses) log::warning("store.salvage_lost", {{"detail", loss}});
}

// --check-ledger DIR: the startup check and salvage, offline, under the same state lock.
int check_ledger(const std::string& state_dir) {
  std::error_code ec;
  if (!std::filesystem::is_directory(state_dir, ec)) {
    std::fprintf(stderr, "ramguardd: --check-ledger %s: not a state directory\n",
                 state_dir.c_str());
    return 1;
  }
  auto lock = StateLock::acquire(state_dir);
  if (!lock) {
    std::fprintf(stderr, "ramguardd: %s\n", lock.error().message.c_str());
    return 1;
  }
  std::optional<SalvageReport> salvaged;
  auto opened = open_or_salvage(state_dir, {}, salvaged);
  if (salvaged) std::cout << salvaged->summary();
  if (!opened) {
    std::fprintf(stderr, "ramguardd: %s\n", opened.error().message.c_str());
    return 1;
  }
  auto runs = (*opened)->run_count();
  auto reservations = (*opened)->load_reservations();
  std::cout << (*opened)->path().string() << ": " << (salvaged ? "salvaged" : "ok") << ", "
            << (runs ? std::to_string(*runs) : std::string("?")) << " runs, "
            << (reservations ? std::to_string(reservations->size()) : std::string("?"))
            << " reservations\n";
  return 0;
}

int run_daemon(Config config, const CommandLine& flags) {
  log::set_level(config.log_level);
  // Startup order: the ledger lock before anything reads the database, then the socket, then
  // recovery; a daemon refused at any step has touched neither the ledger nor the budget.
  auto lock = StateLock::acquire(config.state_dir);
  if (!lock) {
    log::error("daemon.ledger_locked", {{"reason", lock.error().message}});
    std::fprintf(stderr, "ramguardd: %s\n", lock.error().message.c_str());
    return 1;
  }
  asio::io_context io;
  SystemClock clock;
  ProcFs procfs;
  ExitWatcher exits(io);  // before the sampler, which follows forks through its connector
  Sampler sampler(io, procfs, clock, config.sampling.interval);
  if (ProcEvents* events = exits.proc_events()) sampler.follow_forks(*events);
  Admission admission(config.budget_bytes, config.margin_bytes, config.admission.lease, clock);
  admission.set_user_cap(config.admission.max_reserved_per_user_bytes);
  RunParams params = run_params(config);
  RunRegistry registry(io, clock, sampler, exits, admission, params);
  WatchList watches(sampler, exits, clock, params.watch_peak_refresh_ticks);

  // Metrics observe runs and watched targets.
  auto metrics = MetricsExporter::start(config.metrics.listen);
  if (!metrics) {
    log::error("daemon.metrics_failed", {{"reason", metrics.error().message}});
    std::fprintf(stderr, "ramguardd: %s\n", metrics.error().message.c_str());
    return 1;
  }
  (*metrics)->set_budget(config.budget_bytes, config.margin_bytes);
  (*metrics)->set_retention(config.metrics.run_retention);
  (*metrics)->set_max_targets(config.metrics.max_targets);
  (*metrics)->set_max_targets_per_user(config.metrics.max_targets_per_user);
  (*metrics)->set_job_names(config.metrics.job_names);
  RunMetrics run_metrics(**metrics);
  registry.add_observer(&run_metrics);
  watches.set_observer(&run_metrics);

  // The ledger records runs durably and is where recovery reads what was active. Without it
  // runs are guarded in memory only. synchronous=NORMAL in WAL mode: a commit is in the kernel
  // before the mark is acknowledged, so a daemon crash (kill -9) loses nothing acknowledged;
  // only power loss could. FULL would add an fsync (4-8 ms here) to every mark.
  std::unique_ptr<Store> store;
  StoreOptions store_options;
  store_options.sync_every_commit = false;
  std::optional<SalvageReport> salvaged;
  auto opened = open_or_salvage(config.state_dir, store_options, salvaged);
  if (salvaged) log_salvage(*salvaged);
  if (opened) {
    store = std::move(*opened);
    MetricsExporter* exporter = metrics->get();
    store->set_writable_listener([exporter, &io, &registry](bool writable) {
      exporter->set_store_writable(writable);
      // Writable again (whichever write noticed): store the reservations admitted meanwhile
      // right after the current handler, so a restart does not forget them. Posted, because
      // this runs inside the store's commit.
      if (writable) asio::post(io, [&registry] { registry.sync_reservations(); });
    });
  } else {
    log::error("store.unavailable",
               {{"reason", opened.error().message}, {"effect", "runs are guarded in memory only"}});
  }
  (*metrics)->set_store_available(store != nullptr);
  // The jobs' history from the ledger, so a restarted node exports it before its next run.
  if (store) {
    if (auto facts = store->job_facts(config.metrics.max_targets)) {
      for (const JobFacts& f : *facts) {
        (*metrics)->seed_job(f.job, f.owner_uid, f.peak_bytes, f.runs, clock.now());
      }
    } else {
      log::warning("metrics.job_history", {{"reason", facts.error().message}});
    }
  }

  // Requests come in through the control socket (and optionally TCP with a token). They wait
  // in the socket's backlog until io.run(), after recovery below.
  // Admission decides at its desk; what it reads of the machine and the ledger comes through
  // the sources below.
  ProcLoadBaselines baselines(procfs, registry);
  RegistryMachineState machine(procfs, registry);
  AdmissionDesk desk(admission, baselines, machine, {});
  std::optional<StoreJobHistory> history;
  if (store) desk.set_history(&history.emplace(*store));
  // The fleet's history behind the ledger's: asked on the loop, bounded, cached (fleet/).
  std::optional<FleetJobHistory> fleet_history;
  if (!config.admission.history.prometheus_url.empty()) {
    auto fleet = fleet_settings(config);
    if (!fleet) {
      std::fprintf(stderr, "ramguardd: %s\n", fleet.error().message.c_str());
      return 1;
    }
    desk.set_history(&fleet_history.emplace(io, history ? &*history : nullptr, *fleet));
    log::info("admission.fleet_history", {{"url", config.admission.history.prometheus_url},
                                          {"lookback", format_duration(fleet->lookback)},
                                          {"timeout", format_duration(fleet->timeout)}});
  }
  control::Dispatcher dispatcher(registry, admission, desk, machine, store.get(),
                                 control::dispatch_settings(config));
  dispatcher.set_metrics(metrics->get());
  dispatcher.set_group_commit(true);  // the server below flushes before each reply
  control::ControlServer server(io, dispatcher, control::server_limits(config), RAMGUARD_VERSION);
  if (store) {
    // Group commit: writes no request waits for (progress, exits, recovery) are committed at the
    // end of their turn; a rolled-back batch marks its runs' ledgers incomplete.
    store->set_batch_opened_listener([&server] { server.schedule_commit(); });
    store->set_batch_lost_listener(
        [&registry](const std::vector<std::string>& runs, const Error& error) {
          log::warning("store.batch_lost",
                       {{"runs", std::to_string(runs.size())}, {"reason", error.message}});
          for (const std::string& id : runs) registry.store_lost(id);
        });
  }
  // The listeners refer to the server and the registry: the store outlives both.
  struct ForgetBatchListeners {
    Store* store;
    ~ForgetBatchListeners() {
      if (store == nullptr) return;
      (void)store->commit_batch();
      store->set_batch_opened_listener({});
      store->set_batch_lost_listener({});
    }
  } forget_batch_listeners{store.get()};
  std::optional<gid_t> socket_group;
  if (!config.control.socket_group.empty()) {
    // Looked up again: the group database may have changed since the configuration was read.
    auto gid = parse_socket_group(config.control.socket_group);
    if (!gid) {
      std::fprintf(stderr, "ramguardd: control.socket_group: %s\n", gid.error().message.c_str());
      return 1;
    }
    socket_group = *gid;
  }
  if (auto s = server.listen_unix(config.control.socket, config.control.socket_mode, socket_group);
      !s) {
    std::fprintf(stderr, "ramguardd: %s\n", s.error().message.c_str());
    return 1;
  }
  std::optional<LedgerJournal> journal;
  if (store) {
    journal.emplace(*store, config.store.journal_max_writes);
    dispatcher.set_unstored_note([&journal] { return journal->unstored_note(); });
    registry.add_observer(&*journal);
    registry.recover(*journal);
    apply_retention_logged(*store, config.store.retention, clock.now().wall);
  }
  if (config.control.tcp.enabled) {
    auto token = read_token_file(config.control.tcp.token_file);
    if (!token) {
      std::fprintf(stderr, "ramguardd: %s\n", token.error().message.c_str());
      return 1;
    }
    if (auto s = server.listen_tcp(config.control.tcp.listen, *token); !s) {
      std::fprintf(stderr, "ramguardd: %s\n", s.error().message.c_str());
      return 1;
    }
  }
  for (pid_t pid : config.watch) {
    if (auto s = watches.add(pid, watch_scope(config, pid)); !s) {
      log::error("watch.failed", {{"pid", pid}, {"reason", s.error().message}});
    }
  }
  sampler.start();

  // Upkeep once a second: leases, forgetting ended runs, metrics retention, own cost.
  asio::steady_timer upkeep(io);
  std::uint64_t upkeep_ticks = 0;
  std::function<void()> schedule_upkeep = [&] {
    upkeep.expires_after(std::chrono::seconds(1));
    upkeep.async_wait([&](const asio::error_code& ec) {
      if (ec) return;
      registry.housekeeping();
      (*metrics)->set_reserved_bytes(admission.reserved_bytes());
      (*metrics)->sweep(clock.now());
      (void)(*metrics)->update_self("/proc/self/statm");
      (*metrics)->observe_sample_duration(sampler.last_sample_duration_seconds());
      // While the ledger refuses writes (full disk), rewrite the reservations every 5 s: it
      // notices space coming back without waiting for a mark. A file opened read-only stays so
      // until the daemon restarts.
      ++upkeep_ticks;
      if (store && !store->writable() && !store->opened_read_only() && upkeep_ticks % 5 == 0) {
        registry.sync_reservations();
      }
      // What was journalled while the ledger refused writes: retried every second (one write
      // while the disk stays full), so it is written soon after space comes back.
      if (journal) {
        if (journal->behind()) (void)journal->flush_pending();
        (*metrics)->set_store_journal(journal->pending_writes(), journal->max_pending_writes(),
                                      journal->dropped_writes());
      }
      // Retention: hourly, finished runs only (store/retention.hpp).
      if (store && upkeep_ticks % 3600 == 0) {
        apply_retention_logged(*store, config.store.retention, clock.now().wall);
      }
      schedule_upkeep();
    });
  };
  schedule_upkeep();

  asio::signal_set signals(io, SIGTERM, SIGINT, SIGHUP);
  std::function<void()> wait_signal = [&] {
    signals.async_wait([&](const asio::error_code& ec, int signo) {
      if (ec) return;
      if (signo != SIGHUP) {
        log::info("daemon.stopping", {{"signal", signo}, {"active_runs", registry.active_runs()}});
        server.stop();
        sampler.stop();
        upkeep.cancel();
        io.stop();
        return;
      }
      if (!flags.config_path) {
        log::warning("config.reload_skipped", {{"reason", "no --config file to reload"}});
      } else {
        std::vector<std::string> notes;
        auto next = reload(config, *flags.config_path, flags, &notes);
        if (next) next = with_auto_budget(std::move(*next));
        if (next) {
          if (auto usable = validate_for_daemon(*next, *flags.config_path); !usable) {
            next = usable.error();
          }
        }
        if (!next) {
          log::error("config.reload_rejected", {{"file", *flags.config_path},
                                                {"reason", next.error().message},
                                                {"effect", "keeping the running configuration"}});
        } else {
          const Config previous = config;
          config = *next;
          log::set_level(config.log_level);
          sampler.set_interval(config.sampling.interval);
          admission.set_budget(config.budget_bytes, config.margin_bytes);
          admission.set_lease(config.admission.lease);
          admission.set_user_cap(config.admission.max_reserved_per_user_bytes);
          params = run_params(config);
          registry.set_params(params);
          if (journal) journal->set_max_pending_writes(config.store.journal_max_writes);
          watches.set_peak_refresh_ticks(params.watch_peak_refresh_ticks);
          dispatcher.set_settings(control::dispatch_settings(config));
          server.set_limits(control::server_limits(config));
          (*metrics)->set_budget(config.budget_bytes, config.margin_bytes);
          (*metrics)->set_retention(config.metrics.run_retention);
          (*metrics)->set_max_targets(config.metrics.max_targets);
          (*metrics)->set_max_targets_per_user(config.metrics.max_targets_per_user);
          (*metrics)->set_job_names(config.metrics.job_names);
          for (pid_t pid : config.watch) {
            if (std::find(previous.watch.begin(), previous.watch.end(), pid) ==
                previous.watch.end()) {
              if (auto s = watches.add(pid, watch_scope(config, pid)); !s) {
                log::error("watch.failed", {{"pid", pid}, {"reason", s.error().message}});
              }
            }
          }
          for (const auto& note : notes)
            log::warning("config.restart_required", {{"change", note}});
          log::info("config.reloaded",
                    {{"file", *flags.config_path}, {"summary", describe_config(config)}});
        }
      }
      wait_signal();
    });
  };
  wait_signal();

  log::info("daemon.ready", {{"version", RAMGUARD_VERSION},
                             {"socket", config.control.socket},
                             {"metrics_port", static_cast<unsigned>((*metrics)->port())},
                             {"state_dir", config.state_dir},
                             {"store", store != nullptr},
                             {"store_writable", store != nullptr && store->writable()},
                             {"lock", (*lock)->path().string()},
                             {"budget_bytes", config.budget_bytes},
                             {"interval_seconds", seconds(config.sampling.interval)}});
  io.run();
  log::info("daemon.stopped", {});
  return 0;
}

// A budget this small is almost always a size written without its unit ("--budget 16" is 16
// bytes): accepted, but said out loud.
constexpr std::uint64_t kSmallBudgetBytes = 64'000'000;
std::string small_budget_warning(const Config& c) {
  if (c.budget_bytes >= kSmallBudgetBytes) return {};
  return "budget " + std::to_string(c.budget_bytes) +
         " bytes is under 64 MB: a size without a unit is bytes; write 16GB (16e9 bytes) or "
         "16GiB (2^34 bytes)";
}

}  // namespace
}  // namespace ramguard

int main(int argc, char** argv) {
  using namespace ramguard;
  ::signal(SIGPIPE, SIG_IGN);
  control::route_protobuf_log();
  auto flags = parse_command_line(argc, argv);
  if (!flags) {
    std::fprintf(stderr, "ramguardd: %s\nTry 'ramguardd --help'.\n", flags.error().message.c_str());
    return 2;
  }
  if (flags->help) {
    std::cout << usage_text();
    return 0;
  }
  if (flags->version) {
    std::cout << version_text() << "\n";
    return 0;
  }
  if (flags->check_ledger_dir) return check_ledger(*flags->check_ledger_dir);
  if (flags->check_config_path) {
    auto checked = load_config_file(*flags->check_config_path);
    if (checked) {
      checked = with_auto_budget(std::move(*checked));
      if (!checked) checked = Error{*flags->check_config_path + ": " + checked.error().message};
    }
    if (!checked) {
      std::fprintf(stderr, "%s\n", checked.error().message.c_str());
      return 1;
    }
    if (auto usable = validate_for_daemon(*checked, *flags->check_config_path); !usable) {
      std::fprintf(stderr, "%s\n", usable.error().message.c_str());
      return 1;
    }
    std::cout << *flags->check_config_path << ": ok\n" << describe_config(*checked) << "\n";
    if (const std::string w = small_budget_warning(*checked); !w.empty()) {
      std::fprintf(stderr, "warning: %s\n", w.c_str());
    }
    return 0;
  }
  Config config = default_config();
  if (flags->config_path) {
    auto loaded = load_config_file(*flags->config_path);
    if (!loaded) {
      std::fprintf(stderr, "ramguardd: %s\n", loaded.error().message.c_str());
      return 1;
    }
    config = *loaded;
  }
  config = apply_overrides(config, *flags);
  if (auto resolved = with_auto_budget(config); resolved) {
    config = std::move(*resolved);
  } else {
    std::fprintf(stderr, "ramguardd: %s\n", resolved.error().message.c_str());
    return 1;
  }
  if (auto valid = validate_for_daemon(config, flags->config_path.value_or("flags")); !valid) {
    std::fprintf(stderr, "ramguardd: %s\n", valid.error().message.c_str());
    return 1;
  }
  config = with_resolved_paths(config, RuntimeEnv::current());
  log::info("daemon.config", {{"summary", describe_config(config)}});
  if (const std::string w = small_budget_warning(config); !w.empty()) {
    std::fprintf(stderr, "ramguardd: warning: %s\n", w.c_str());
    log::warning("config.small_budget", {{"budget_bytes", config.budget_bytes}, {"reason", w}});
  }
  return run_daemon(config, *flags);
}
