#pragma once
// A short human summary of a configuration, logged at startup and after each reload so an
// operator sees what the daemon actually runs with. Decimal GB, units always printed.

#include <string>
#include <vector>

#include "config/config.hpp"

namespace ramguard {

// A few lines, no trailing newline:
//   budget 16.00 GB (margin 0 B), sampling every 2s
//   control socket /run/ramguard/ramguard.sock (mode 0660), TCP off; metrics on 127.0.0.1:9797
//   state dir /var/lib/ramguard; log level info
//   plans: fedavg (load, aggregation, synchronization, save; overhead 0.16 GB)
//   phase gaps: aggregation.end -> synchronization.begin <= 10s
//   thresholds: growth 0.51 GB/round, release 1.00 GB within 30s, headroom 90%, lease 1m
//   watching PIDs: 1234
// Empty socket or state dir (not yet resolved) print as "(auto)".
std::string describe_config(const Config& config);

// The settings an operator compares, one "key: value" line each, in a fixed order (budget,
// the guard's security settings, limits, thresholds). The daemon writes them to
// <state_dir>/running-config at every apply, so `--check-config FILE` can show what a reload
// with FILE would change (config_differences).
inline constexpr const char* kRunningConfigFile = "running-config";
std::string settings_text(const Config& config);

// "key: RUNNING -> FILE" for each key whose line differs between two settings_text outputs.
std::vector<std::string> config_differences(const std::string& running, const std::string& next);

}  // namespace ramguard
