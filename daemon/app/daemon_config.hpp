#pragma once
// The configuration the daemon runs with, from its flags and file: the same steps at start-up,
// for --check-config and at every SIGHUP (file, flags over it, `budget: auto` resolved, the
// daemon's own rules). Errors name the file or flag; the caller prints or logs them.

#include <filesystem>
#include <string>
#include <vector>

#include "admission/desk.hpp"
#include "config/command_line.hpp"
#include "config/config.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

// Start-up: the embedded defaults or --config FILE, the flags over it, paths resolved.
Result<Config> startup_config(const CommandLine& flags);

// --check-config FILE: the file alone, as the daemon would accept it.
Result<Config> checked_config_file(const std::filesystem::path& path);

// SIGHUP: FILE read again over `running`; restart-only changes are kept and listed in `notes`.
Result<Config> reloaded_config(const Config& running, const std::filesystem::path& path,
                               const CommandLine& flags, std::vector<std::string>* notes);

// --check-config: what the checked file changes against the running daemon's settings, read
// from <state_dir>/running-config (the daemon writes it at every apply; config/describe.hpp),
// as lines "key: RUNNING -> FILE"; says so when there is no such file.
std::string compared_with_running(const Config& checked);

// The admission desk's settings: plans, calibration, whose history it reads.
DeskSettings desk_settings(const Config& config);

// A budget under 64 MB is almost always a size written without its unit ("--budget 16" is 16
// bytes): accepted, but said out loud. Empty when the budget looks meant.
std::string small_budget_warning(const Config& config);

}  // namespace ramguard
