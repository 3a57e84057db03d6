// Reloads that cannot silently weaken the guard, against the real daemon: an empty file, a file
// cut short (valid YAML without its security keys) and a bare `budget: 10` are refused with the
// running configuration kept; a file that names every key is applied; --check-config lists what
// a file changes against the running daemon.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>

#include "harness.hpp"

namespace ramguard::testing {
namespace {

// A packaged configuration: stricter than the defaults in every key a truncation could drop.
constexpr const char* kHardened =
    "budget: 8GB\n"
    "metrics:\n  job_names: omit\n"
    "admission:\n  lease: 10m\n  max_reserved_per_user: 2GB\n  max_active_runs_per_user: 4\n";

std::uint64_t budget_of(const Daemon& d) {
  v1::Request hello;
  hello.mutable_hello();
  return d.call(hello).hello().budget_bytes();
}

// Writes `text` over the daemon's file, reloads, and returns the reload's log line.
std::string reload_with(Daemon& d, const std::string& text, std::size_t& lines_before) {
  const auto config = d.socket_path().parent_path() / "ramguard.yaml";
  std::ofstream(config, std::ios::trunc) << text;
  lines_before = d.log_lines().size();
  ::kill(d.pid(), SIGHUP);
  std::string line;
  eventually(
      [&] {
        const auto lines = d.log_lines();
        for (std::size_t i = lines_before; i < lines.size(); ++i) {
          if (lines[i].find("event=config.reload") != std::string::npos) line = lines[i];
        }
        return !line.empty();
      },
      std::chrono::seconds(10));
  return line;
}

TEST(ConfigReload, AHalfWrittenFileCannotWeakenTheGuard) {
  auto d = Daemon::with_config(kHardened);
  ASSERT_EQ(budget_of(*d), 8'000'000'000u);
  std::size_t before = 0;

  std::string line = reload_with(*d, "", before);
  EXPECT_NE(line.find("event=config.reload_rejected"), std::string::npos) << line;
  EXPECT_NE(line.find("the file is empty"), std::string::npos) << line;
  EXPECT_NE(line.find("keeping the running configuration"), std::string::npos) << line;

  // Cut after the budget: the caps, the lease and the job names would go to their defaults.
  line = reload_with(*d, "budget: 8GB\nmetrics:\n", before);
  EXPECT_NE(line.find("event=config.reload_rejected"), std::string::npos) << line;
  for (const char* key : {"admission.max_reserved_per_user", "admission.max_active_runs_per_user",
                          "admission.lease", "metrics.job_names"}) {
    EXPECT_NE(line.find(key), std::string::npos) << key << ": " << line;
  }

  line = reload_with(*d,
                     "budget: 10\nmetrics:\n  job_names: omit\nadmission:\n  lease: 10m\n"
                     "  max_reserved_per_user: 2GB\n  max_active_runs_per_user: 4\n",
                     before);
  EXPECT_NE(line.find("budget 10 is bytes, under 64 MB"), std::string::npos) << line;
  EXPECT_EQ(budget_of(*d), 8'000'000'000u) << "still the running configuration";

  // Every key named: meant, and applied.
  line = reload_with(*d,
                     "budget: 6GB\nmetrics:\n  job_names: plain\nadmission:\n  lease: 1m\n"
                     "  max_reserved_per_user: 0\n  max_active_runs_per_user: 0\n",
                     before);
  EXPECT_NE(line.find("event=config.reloaded"), std::string::npos) << line;
  EXPECT_EQ(budget_of(*d), 6'000'000'000u);
}

TEST(ConfigReload, CheckConfigListsTheDifferencesFromTheRunningDaemon) {
  auto d = Daemon::with_config(kHardened);
  const auto file = d->socket_path().parent_path() / "next.yaml";
  std::ofstream(file) << "state_dir: " << d->state_dir().string()
                      << "\nbudget: 4GB\nmetrics:\n  job_names: plain\n"
                         "admission:\n  lease: 10m\n  max_reserved_per_user: 2GB\n"
                         "  max_active_runs_per_user: 4\n";
  const CommandResult checked = run_command({daemon_path(), "--check-config", file.string()});
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_NE(checked.output.find("compared with the running configuration (" +
                                (d->state_dir() / "running-config").string() + "): 2 differences"),
            std::string::npos)
      << checked.output;
  EXPECT_NE(checked.output.find("  budget: 8.00 GB -> 4.00 GB"), std::string::npos)
      << checked.output;
  EXPECT_NE(checked.output.find("  metrics.job_names: omit -> plain"), std::string::npos)
      << checked.output;

  // Without a daemon on that state dir, it says there is nothing to compare.
  const auto lone = d->socket_path().parent_path() / "lone.yaml";
  std::ofstream(lone) << "state_dir: " << (d->socket_path().parent_path() / "nowhere").string()
                      << "\n";
  const CommandResult alone = run_command({daemon_path(), "--check-config", lone.string()});
  EXPECT_EQ(alone.exit_code, 0) << alone.output;
  EXPECT_NE(alone.output.find("nothing to compare"), std::string::npos) << alone.output;
}

}  // namespace
}  // namespace ramguard::testing
