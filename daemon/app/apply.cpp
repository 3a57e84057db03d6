// One path for a configuration, at start-up and at every SIGHUP.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "app/daemon.hpp"
#include "app/daemon_config.hpp"
#include "common/log.hpp"
#include "config/describe.hpp"
#include "control/settings_from_config.hpp"
#include "runs/params_from_config.hpp"

namespace ramguard {
namespace {

// What a watched PID is watched as: its process, its tree or its memory cgroup.
Scope watch_scope(const Config& config, pid_t pid) {
  const auto it = config.watch_scopes.find(pid);
  return it == config.watch_scopes.end() ? Scope::kProcess : it->second;
}

// What --check-config compares a file with (config/describe.hpp). Written whole, then renamed
// over the old one, so a reader never sees half of it.
void write_running_config(const Config& config) {
  if (config.state_dir.empty()) return;
  const std::filesystem::path path = std::filesystem::path(config.state_dir) / kRunningConfigFile;
  const std::filesystem::path temp = path.string() + ".tmp";
  const std::string text = settings_text(config);
  bool ok = false;
  if (std::FILE* f = std::fopen(temp.c_str(), "w")) {
    ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
    ok = (std::fclose(f) == 0) && ok;
  }
  std::error_code ec;
  if (ok) std::filesystem::rename(temp, path, ec);
  if (!ok || ec) {
    std::filesystem::remove(temp, ec);
    log::warning("config.running_not_written",
                 {{"file", path.string()},
                  {"effect", "--check-config cannot show what a reload would change"}});
  }
}

}  // namespace

void Daemon::apply(const Config& next) {
  // PIDs are added, never dropped: a reload does not stop watching what it watched.
  const std::vector<pid_t> watched = applied_ ? config_.watch : std::vector<pid_t>{};
  config_ = next;
  applied_ = true;
  log::set_level(next.log_level);
  sampler_.set_interval(next.sampling.interval);
  sampler_.set_slow_read(next.sampling.slow_read);
  admission_.set_budget(next.budget_bytes, next.margin_bytes);
  admission_.set_lease(next.admission.lease);
  admission_.set_user_cap(user_reserve_cap_bytes(next.admission, next.budget_bytes));
  const RunParams params = run_params(next);
  registry_.set_params(params);
  watches_.set_peak_refresh_ticks(params.watch_peak_refresh_ticks);
  desk_.set_settings(desk_settings(next));
  dispatcher_.set_peers_read(next.control.peers_read);
  server_.set_limits(control::server_limits(next));
  if (journal_) {
    journal_->set_max_pending_writes(next.store.journal_max_writes);
    show_journal();
  }
  upkeep_.set_retention(next.store.retention);
  metrics_->daemon()->set_budget(next.budget_bytes, next.margin_bytes);
  {
    auto table = metrics_->table();
    table->set_retention(next.metrics.run_retention);
    table->set_max_targets(next.metrics.max_targets);
    table->set_max_targets_per_user(next.metrics.max_targets_per_user);
    table->set_job_names(next.metrics.job_names);
  }
  for (pid_t pid : next.watch) {
    if (std::find(watched.begin(), watched.end(), pid) != watched.end()) continue;
    if (auto s = watches_.add(pid, watch_scope(next, pid)); !s) {
      log::error("watch.failed", {{"pid", pid}, {"reason", s.error().message}});
    }
  }
  write_running_config(config_);
}

void Daemon::reload() {
  if (!flags_.config_path) {
    log::warning("config.reload_skipped", {{"reason", "no --config file to reload"}});
    return;
  }
  const std::string& file = *flags_.config_path;
  std::vector<std::string> notes;
  auto next = reloaded_config(config_, file, flags_, &notes);
  if (!next) {
    log::error("config.reload_rejected", {{"file", file},
                                          {"reason", next.error().message},
                                          {"effect", "keeping the running configuration"}});
    return;
  }
  apply(*next);
  for (const auto& note : notes) log::warning("config.restart_required", {{"change", note}});
  log::info("config.reloaded", {{"file", file}, {"summary", describe_config(config_)}});
}

}  // namespace ramguard
