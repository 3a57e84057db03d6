#pragma once
// Parsers of the configuration's textual values that are not sizes or durations (those are in
// ramguard/base/units.hpp). Pure functions over text, shared by the YAML loader and the command
// line. Each error message names the text and what is allowed; the caller prefixes the key or flag.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "config/config.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

// "HOST:PORT" (numeric IPv4 or localhost, which becomes 127.0.0.1) or "[IPv6]:PORT", port
// 0-65535 (0: pick a free port).
Result<Endpoint> parse_endpoint(std::string_view text);

// debug, info, warning (or warn), error.
Result<log::Level> parse_log_level(std::string_view text);

// "all" or "own" (control.peers_read).
Result<PeersRead> parse_peers_read(std::string_view text);
Result<JobNames> parse_job_names(std::string_view text);  // plain, hash or omit
const char* job_names_name(JobNames value);
const char* peers_read_name(PeersRead value);

// Octal permission bits, "0660" or "660" (or "0o660"), at most 0777.
Result<std::uint32_t> parse_socket_mode(std::string_view text);

// control.socket_group: a group name in the group database, or a numeric GID; its GID.
Result<gid_t> parse_socket_group(std::string_view text);

// "<phase>.begin" or "<phase>.end".
Result<PhaseEdge> parse_phase_edge(std::string_view text);

// A plan state's count: a non-negative number ("1", "0.5"), "hosts", or "N*hosts" ("2*hosts").
struct PlanCopies {
  double copies = 1;
  bool per_host = false;
};
Result<PlanCopies> parse_plan_copies(std::string_view text);

// A process ID: a positive integer up to the kernel's PID limit.
Result<pid_t> parse_pid(std::string_view text);
// A watched target: "PID" (the process), "tree:PID" (it and its descendants) or "cgroup:PID"
// (its memory cgroup), the run scopes.
struct WatchItem {
  pid_t pid = 0;
  Scope scope = Scope::kProcess;
};
Result<WatchItem> parse_watch_item(std::string_view text);

// A whole non-negative number (digits only) within [min, max].
Result<std::uint64_t> parse_count(std::string_view text, std::uint64_t min, std::uint64_t max);

// A finite decimal number ("0.8", "1e3").
Result<double> parse_real(std::string_view text);

// true/false, yes/no, on/off (any case).
Result<bool> parse_bool(std::string_view text);

// Plan, phase and state names: 1-64 of letters, digits, '_' and '-'.
bool is_valid_name(std::string_view name);

// A duration within [min, max]: the error says "<text> is out of range; allowed MIN to MAX".
Result<std::chrono::nanoseconds> parse_duration_in(std::string_view text,
                                                   std::chrono::nanoseconds min,
                                                   std::chrono::nanoseconds max);
// A size within [min, max], same wording.
Result<std::uint64_t> parse_size_in(std::string_view text, std::uint64_t min, std::uint64_t max);

// "800ms", "2s", "10m", "1h" (the form the configuration reads back): the largest unit that
// divides D exactly, else decimal seconds; for messages and summaries.
std::string format_duration(std::chrono::nanoseconds d);

}  // namespace ramguard
