// ramguardd: flags, the configuration, and the Daemon (app/daemon.hpp) that does the rest.
#include <signal.h>

#include <cstdio>
#include <iostream>

#include "app/daemon.hpp"
#include "app/daemon_config.hpp"
#include "app/ledger_check.hpp"
#include "common/log.hpp"
#include "config/command_line.hpp"
#include "config/describe.hpp"
#include "control/protobuf_log.hpp"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "ramguardd: %s\n", message.c_str());
  return 1;
}

// --check-config FILE: the file as the daemon would take it, summarised; 1 when refused.
int check_config(const std::string& path) {
  auto checked = ramguard::checked_config_file(path);
  if (!checked) {
    std::fprintf(stderr, "%s\n", checked.error().message.c_str());
    return 1;
  }
  std::cout << path << ": ok\n" << ramguard::describe_config(*checked) << "\n";
  std::cout << ramguard::compared_with_running(*checked);
  if (const std::string w = ramguard::small_budget_warning(*checked); !w.empty()) {
    std::fprintf(stderr, "warning: %s\n", w.c_str());
  }
  return 0;
}

}  // namespace

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
  if (flags->check_ledger_dir) return check_ledger_offline(*flags->check_ledger_dir);
  if (flags->check_config_path) return check_config(*flags->check_config_path);

  auto config = startup_config(*flags);
  if (!config) return fail(config.error().message);
  log::info("daemon.config", {{"summary", describe_config(*config)}});
  if (const std::string w = small_budget_warning(*config); !w.empty()) {
    std::fprintf(stderr, "ramguardd: warning: %s\n", w.c_str());
    log::warning("config.small_budget", {{"budget_bytes", config->budget_bytes}, {"reason", w}});
  }
  auto daemon = Daemon::open(*config, *flags);
  if (!daemon) return fail(daemon.error().message);
  return (*daemon)->run();
}
