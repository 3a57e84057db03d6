#pragma once
// A short human summary of a configuration, logged at startup and after each reload so an
// operator sees what the daemon actually runs with. Decimal GB, units always printed.

#include <string>

#include "config/config.hpp"

namespace ramguard {

// A few lines, no trailing newline:
//   budget 16.00 GB (margin 0 B), sampling every 2s
//   control socket /run/ramguard/ramguard.sock (mode 0660), TCP off; metrics on 127.0.0.1:9797
//   state dir /var/lib/ramguard; log level info
//   plans: fedavg (load, aggregation, synchronization, save; overhead 0.30 GB)
//   phase gaps: aggregation.end -> synchronization.begin <= 10s
//   thresholds: growth 0.51 GB/round, release 1.00 GB within 30s, headroom 90%, lease 1m
//   watching PIDs: 1234
// Empty socket or state dir (not yet resolved) print as "(auto)".
std::string describe_config(const Config& config);

}  // namespace ramguard
