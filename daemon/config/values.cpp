#include "config/values.hpp"

#include <arpa/inet.h>
#include <grp.h>

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <vector>

#include "config/limits.hpp"
#include "ramguard/base/protocol.hpp"
#include "ramguard/base/units.hpp"

namespace ramguard {
namespace {

// Appended piecewise: GCC 12 reports a false -Wrestrict at -O3 on "'" + std::string(text).
std::string quoted(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 2);
  out += '\'';
  out += text;
  out += '\'';
  return out;
}

bool all_digits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// A listener binds an address, so the host is numeric; a name would be resolved by nobody.
bool numeric_host(const std::string& host, bool bracketed) {
  if (bracketed) {
    in6_addr v6{};
    return ::inet_pton(AF_INET6, host.c_str(), &v6) == 1;
  }
  in_addr v4{};
  return ::inet_pton(AF_INET, host.c_str(), &v4) == 1;
}

}  // namespace

Result<Endpoint> parse_endpoint(std::string_view text) {
  const std::string allowed =
      "; expected HOST:PORT with a numeric IPv4 host, [IPv6] or localhost (for example "
      "127.0.0.1:9797, [::1]:9797), port 0-65535 (0 picks a free port)";
  const auto colon = text.rfind(':');
  if (colon == std::string_view::npos) return Error{"invalid address " + quoted(text) + allowed};
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  bool bracketed = false;
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    bracketed = true;
  }
  std::string numeric(host);
  if (!bracketed && numeric == "localhost") numeric = "127.0.0.1";
  if (!numeric_host(numeric, bracketed)) {
    return Error{"invalid host in address " + quoted(text) + allowed};
  }
  std::uint32_t port = 0;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (!all_digits(port_text) || ec != std::errc() || ptr != port_text.data() + port_text.size() ||
      port > 65535) {
    return Error{"invalid port in address " + quoted(text) + allowed};
  }
  return Endpoint{std::move(numeric), static_cast<std::uint16_t>(port)};
}

Result<log::Level> parse_log_level(std::string_view text) {
  const std::string l = lower(text);
  if (l == "debug") return log::Level::kDebug;
  if (l == "info") return log::Level::kInfo;
  if (l == "warning" || l == "warn") return log::Level::kWarning;
  if (l == "error") return log::Level::kError;
  return Error{"invalid log level " + quoted(text) + "; expected debug, info, warning or error"};
}

Result<PeersRead> parse_peers_read(std::string_view text) {
  const std::string l = lower(text);
  if (l == "all") return PeersRead::kAll;
  if (l == "own") return PeersRead::kOwn;
  return Error{"invalid peers_read " + quoted(text) +
               "; expected all (any member of the socket's group reads every run) or own (only "
               "its own runs and reservations)"};
}

Result<JobNames> parse_job_names(std::string_view text) {
  const std::string l = lower(text);
  if (l == "plain") return JobNames::kPlain;
  if (l == "hash") return JobNames::kHash;
  if (l == "omit") return JobNames::kOmit;
  return Error{"invalid job_names " + quoted(text) +
               "; expected plain (the job name), hash (a stable hash of it) or omit (an empty "
               "label)"};
}

const char* job_names_name(JobNames value) {
  switch (value) {
    case JobNames::kHash:
      return "hash";
    case JobNames::kOmit:
      return "omit";
    case JobNames::kPlain:
      break;
  }
  return "plain";
}

const char* peers_read_name(PeersRead value) {
  return value == PeersRead::kOwn ? "own" : "all";
}

Result<std::uint32_t> parse_socket_mode(std::string_view text) {
  std::string_view digits = text;
  if (digits.starts_with("0o") || digits.starts_with("0O")) digits.remove_prefix(2);
  std::uint32_t mode = 0;
  bool ok = !digits.empty() && digits.size() <= 4;
  for (char c : digits) {
    if (c < '0' || c > '7') ok = false;
    mode = mode * 8 + static_cast<std::uint32_t>(c - '0');
  }
  if (!ok || mode > 0777) {
    return Error{"invalid socket mode " + quoted(text) +
                 "; expected octal permission bits from 0000 to 0777, for example \"0660\""};
  }
  return mode;
}

Result<gid_t> parse_socket_group(std::string_view text) {
  const std::string name(text);
  const bool numeric = !name.empty() && name.find_first_not_of("0123456789") == std::string::npos;
  if (numeric) {
    auto gid = parse_count(name, 0, 0xfffffffeu);  // (gid_t)-1 means "unchanged" to chown()
    if (!gid) return Error{"invalid socket group " + quoted(text) + ": " + gid.error().message};
    return static_cast<gid_t>(*gid);
  }
  std::vector<char> buffer(16384);
  group entry{};
  group* found = nullptr;
  const int rc = ::getgrnam_r(name.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (rc != 0 || found == nullptr || name.empty()) {
    return Error{"unknown socket group " + quoted(text) +
                 ": not in the group database; expected a group name or a numeric GID"};
  }
  return found->gr_gid;
}

Result<PhaseEdge> parse_phase_edge(std::string_view text) {
  const auto dot = text.rfind('.');
  const std::string allowed =
      "; expected <phase>.begin or <phase>.end (for example aggregation.end)";
  if (dot == std::string_view::npos) return Error{"invalid phase edge " + quoted(text) + allowed};
  const std::string_view phase = text.substr(0, dot);
  const std::string_view edge = text.substr(dot + 1);
  if (!protocol::is_phase_name(phase)) {
    return Error{"invalid phase name in " + quoted(text) + allowed + ", a phase is " +
                 protocol::kPhaseNameRule};
  }
  if (edge == "begin") return PhaseEdge{std::string(phase), PhaseEdge::Edge::kBegin};
  if (edge == "end") return PhaseEdge{std::string(phase), PhaseEdge::Edge::kEnd};
  return Error{"invalid phase edge " + quoted(text) + allowed};
}

Result<PlanCopies> parse_plan_copies(std::string_view text) {
  const std::string allowed =
      "; expected a number of copies >= 0, hosts, or N*hosts (for "
      "example 1, 0.5, hosts, 2*hosts)";
  std::string compact;
  for (char c : text) {
    if (c != ' ' && c != '\t') compact.push_back(c);
  }
  PlanCopies out;
  std::string_view number = compact;
  if (number == "hosts") return PlanCopies{1, true};
  if (number.ends_with("*hosts")) {
    number.remove_suffix(6);
    out.per_host = true;
  }
  auto copies = parse_real(number);
  if (!copies.ok()) return Error{"invalid count " + quoted(text) + allowed};
  if (*copies < 0) return Error{"negative count " + quoted(text) + allowed};
  if (*copies > limits::kMaxPlanCopies) return Error{"count " + quoted(text) + " is too large"};
  out.copies = *copies;
  return out;
}

Result<pid_t> parse_pid(std::string_view text) {
  auto pid = parse_count(text, 1, static_cast<std::uint64_t>(protocol::kMaxPid));
  if (!pid.ok()) {
    return Error{"invalid PID " + quoted(text) + "; expected a positive integer up to " +
                 std::to_string(protocol::kMaxPid)};
  }
  return static_cast<pid_t>(*pid);
}

Result<WatchItem> parse_watch_item(std::string_view text) {
  WatchItem item;
  const std::size_t colon = text.find(':');
  if (colon != std::string_view::npos) {
    const std::string_view name = text.substr(0, colon);
    auto scope = parse_scope(name);
    if (name.empty() || !scope) {
      return Error{"unknown scope " + quoted(name) + " in " + quoted(text) +
                   "; expected PID, tree:PID or cgroup:PID"};
    }
    item.scope = *scope;
    text.remove_prefix(colon + 1);
  }
  auto pid = parse_pid(text);
  if (!pid.ok()) return pid.error();
  item.pid = *pid;
  return item;
}

Result<std::uint64_t> parse_count(std::string_view text, std::uint64_t min, std::uint64_t max) {
  std::uint64_t value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  const std::string allowed =
      "; expected a whole number from " + std::to_string(min) + " to " + std::to_string(max);
  if (!all_digits(text) || ec != std::errc() || ptr != text.data() + text.size()) {
    return Error{"invalid number " + quoted(text) + allowed};
  }
  if (value < min || value > max) return Error{quoted(text) + " is out of range" + allowed};
  return value;
}

Result<double> parse_real(std::string_view text) {
  double value = 0;
  const char* begin = text.data();
  if (!text.empty() && text.front() == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() ||
      !std::isfinite(value)) {
    return Error{"invalid number " + quoted(text) + "; expected a decimal number"};
  }
  return value;
}

Result<bool> parse_bool(std::string_view text) {
  const std::string l = lower(text);
  if (l == "true" || l == "yes" || l == "on") return true;
  if (l == "false" || l == "no" || l == "off") return false;
  return Error{"invalid boolean " + quoted(text) + "; expected true or false"};
}

bool is_valid_name(std::string_view name) {
  if (name.empty() || name.size() > limits::kMaxNameLength) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-') return false;
  }
  return true;
}

Result<std::chrono::nanoseconds> parse_duration_in(std::string_view text,
                                                   std::chrono::nanoseconds min,
                                                   std::chrono::nanoseconds max) {
  auto d = parse_duration(text);
  if (!d.ok()) return d;
  if (*d < min || *d > max) {
    return Error{quoted(text) + " is out of range; allowed " + format_duration(min) + " to " +
                 format_duration(max)};
  }
  return d;
}

Result<std::uint64_t> parse_size_in(std::string_view text, std::uint64_t min, std::uint64_t max) {
  auto size = parse_size_bytes(text);
  if (!size.ok()) return size;
  if (*size < min || *size > max) {
    return Error{quoted(text) + " is out of range; allowed " + std::to_string(min) + " to " +
                 std::to_string(max) + " bytes"};
  }
  return size;
}

std::string format_duration(std::chrono::nanoseconds d) {
  struct Unit {
    std::chrono::nanoseconds size;
    const char* suffix;
  };
  const Unit units[] = {{std::chrono::hours(1), "h"},
                        {std::chrono::minutes(1), "m"},
                        {std::chrono::seconds(1), "s"},
                        {std::chrono::milliseconds(1), "ms"}};
  for (const Unit& u : units) {
    if (d.count() != 0 && d.count() % u.size.count() == 0) {
      return std::to_string(d / u.size) + u.suffix;
    }
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%gs", std::chrono::duration<double>(d).count());
  return d.count() == 0 ? std::string("0s") : std::string(buf);
}

}  // namespace ramguard
