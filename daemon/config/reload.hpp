#pragma once
// SIGHUP: read the file again and decide what the running daemon adopts. A bad file is an
// error and the caller keeps `current` untouched; a good one comes back with the flags layered
// over it again (flags keep winning after a reload).
//
// Listeners and on-disk locations cannot move under a running daemon: state_dir,
// control.socket, control.socket_mode, control.tcp and metrics.listen keep their running
// values, and each change of one of them is reported in `notes` as needing a restart.
// Everything else (budget, thresholds, plans, phase gaps, interval, limits, log level, watch)
// is taken from the new file; the caller applies it.

#include <filesystem>
#include <string>
#include <vector>

#include "config/command_line.hpp"
#include "config/config.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

Result<Config> reload(const Config& current, const std::filesystem::path& path,
                      const CommandLine& flags = {}, std::vector<std::string>* notes = nullptr);

// The restart-only keys whose value in `next` differs from `running`, as
// "metrics.listen: 127.0.0.1:9797 -> 0.0.0.0:9797 takes effect after a restart". An empty
// socket or state_dir in `next` means "resolve as before" and is no change.
std::vector<std::string> restart_required_changes(const Config& running, const Config& next);

}  // namespace ramguard
