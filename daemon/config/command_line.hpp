#pragma once
// ramguardd's flags. Each is optional; apply_overrides layers the given ones over the
// configuration from the file (or the embedded defaults): flags win.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/config.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

struct CommandLine {
  std::optional<std::string> config_path;        // --config FILE
  std::optional<std::string> check_config_path;  // --check-config FILE: validate and exit
  std::optional<std::string> check_ledger_dir;   // --check-ledger DIR: check/salvage and exit
  std::vector<pid_t> watch;                      // --watch [tree:|cgroup:]PID (repeatable)
  std::map<pid_t, Scope> watch_scopes;           // the tree: / cgroup: ones
  std::optional<std::chrono::nanoseconds> interval;
  std::optional<Endpoint> metrics;
  std::optional<std::string> socket;
  std::optional<std::string> state_dir;
  std::optional<std::uint64_t> budget_bytes;
  bool budget_auto = false;  // --budget auto
  std::optional<log::Level> log_level;
  bool help = false;
  bool version = false;
  friend bool operator==(const CommandLine&, const CommandLine&) = default;
};

// Accepts "--flag value" and "--flag=value" (and -h for --help). An unknown flag, a missing or
// bad value, or a stray argument is an error that names the flag and what it accepts.
Result<CommandLine> parse_command_line(int argc, const char* const* argv);
inline Result<CommandLine> parse_command_line(int argc, char** argv) {
  return parse_command_line(argc, const_cast<const char* const*>(argv));
}

// Flags over the file: every flag given replaces the file's value; --watch PIDs are added to
// the file's watch list. Run validate_config on the result (a flag can break a cross-key rule).
Config apply_overrides(Config config, const CommandLine& flags);

// The --help text, every flag with what it accepts and its default.
std::string usage_text();
// "ramguardd 0.1.0".
std::string version_text();

}  // namespace ramguard
