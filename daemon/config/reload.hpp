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
//
// A file that would weaken the guard only because a key is missing is refused whole
// (check_reload_weakening): systemd and Slurm keep the running state when a reload fails, and
// a half-written file is the usual reason a key is missing.

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "config/command_line.hpp"
#include "config/config.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

Result<Config> reload(const Config& current, const std::filesystem::path& path,
                      const CommandLine& flags = {}, std::vector<std::string>* notes = nullptr);

// Budgets under this are almost always a size written without its unit ("16" is 16 bytes).
inline constexpr std::uint64_t kSmallBudgetBytes = 64'000'000;

// Refuses (FAILED_PRECONDITION, naming each key) a `next` read from `file_text` that lowers a
// security-relevant setting of `running` to its default because the file leaves the key out:
// the per-user caps (off or higher), metrics.job_names (towards plain), control.peers_read
// (own to all), the lease (shorter), the budget (higher). Also refused: an empty file, and a
// budget under 64 MB written as a bare number. A key the file names is taken as meant.
Status check_reload_weakening(const Config& running, const Config& next,
                              std::string_view file_text);

// The restart-only keys whose value in `next` differs from `running`, as
// "metrics.listen: 127.0.0.1:9797 -> 0.0.0.0:9797 takes effect after a restart". An empty
// socket or state_dir in `next` means "resolve as before" and is no change.
std::vector<std::string> restart_required_changes(const Config& running, const Config& next);

}  // namespace ramguard
