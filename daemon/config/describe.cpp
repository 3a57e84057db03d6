#include "config/describe.hpp"

#include <cstdio>
#include <map>

#include "config/values.hpp"
#include "ramguard/base/units.hpp"

namespace ramguard {
namespace {

std::string bytes(std::uint64_t b) {
  return format_bytes(static_cast<double>(b));
}
std::string or_auto(const std::string& s) {
  return s.empty() ? "(auto)" : s;
}

// Both forms of a size threshold given in model copies: "0.2 model copies/round (0.51 GB/round
// for a run without a model size)"; the bytes alone otherwise.
std::string threshold(std::uint64_t size_bytes, double model_copies, const char* per = "") {
  if (model_copies <= 0) return bytes(size_bytes) + per;
  char copies[32];
  std::snprintf(copies, sizeof copies, "%g", model_copies);
  return std::string(copies) + " model copies" + per + " (" + bytes(size_bytes) + per +
         " for a run without a model size)";
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g%%", fraction * 100);
  return buf;
}

std::map<std::string, std::string> settings_map(const std::string& text,
                                                std::vector<std::string>* order) {
  std::map<std::string, std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(at, end - at);
    at = end + 1;
    const std::size_t colon = line.find(": ");
    if (colon == std::string::npos) continue;
    const std::string key = line.substr(0, colon);
    if (order != nullptr && out.count(key) == 0) order->push_back(key);
    out[key] = line.substr(colon + 2);
  }
  return out;
}

}  // namespace

std::string settings_text(const Config& c) {
  std::string out;
  const auto line = [&out](const char* key, const std::string& value) {
    out += std::string(key) + ": " + value + "\n";
  };
  line("budget", c.budget_auto ? "auto (" + bytes(c.budget_bytes) + ")" : bytes(c.budget_bytes));
  line("margin", bytes(c.margin_bytes));
  line("admission.max_reserved_per_user",
       c.admission.max_reserved_per_user_bytes != 0
           ? bytes(c.admission.max_reserved_per_user_bytes)
           : percent(c.admission.max_reserved_per_user_fraction) + " of the budget (" +
                 bytes(user_reserve_cap_bytes(c.admission, c.budget_bytes)) + ")");
  line("admission.max_active_runs_per_user", std::to_string(c.admission.max_active_runs_per_user));
  line("admission.lease", format_duration(c.admission.lease));
  line("admission.use_calibrated", c.admission.use_calibrated ? "true" : "false");
  line("control.peers_read", peers_read_name(c.control.peers_read));
  line("control.max_runs", std::to_string(c.control.max_runs));
  line("control.max_connections_per_uid", std::to_string(c.control.max_connections_per_uid));
  line("control.max_requests_per_second", std::to_string(c.control.max_requests_per_second));
  line("metrics.job_names", job_names_name(c.metrics.job_names));
  line("metrics.max_targets_per_user", std::to_string(c.metrics.max_targets_per_user));
  line("sampling.interval", format_duration(c.sampling.interval));
  line("growth.min_bytes", bytes(c.growth.min_bytes));
  line("release.slack_bytes", bytes(c.release.slack_bytes));
  line("log_level", log::level_name(c.log_level));
  return out;
}

std::vector<std::string> config_differences(const std::string& running, const std::string& next) {
  std::vector<std::string> order;
  const auto was = settings_map(running, nullptr);
  const auto now = settings_map(next, &order);
  std::vector<std::string> out;
  for (const std::string& key : order) {
    const auto it = was.find(key);
    const std::string from = it == was.end() ? "(not known)" : it->second;
    if (from != now.at(key)) out.push_back(key + ": " + from + " -> " + now.at(key));
  }
  return out;
}

std::string describe_config(const Config& c) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", c.control.socket_mode);
  std::string budget = bytes(c.budget_bytes);
  if (c.budget_auto) {
    budget = c.auto_total_bytes != 0
                 ? budget + " (auto: MemTotal " + bytes(c.auto_total_bytes) +
                       " less system reserve " + bytes(c.system_reserve_bytes) + ")"
                 : "auto (MemTotal less system reserve " + bytes(c.system_reserve_bytes) + ")";
  }
  std::string out = "budget " + budget + " (margin " + bytes(c.margin_bytes) +
                    "), sampling every " + format_duration(c.sampling.interval) + "\n";
  out += "control socket " + or_auto(c.control.socket) + " (mode " + mode +
         (c.control.socket_group.empty() ? std::string() : ", group " + c.control.socket_group) +
         "), TCP " +
         (c.control.tcp.enabled ? "on " + c.control.tcp.listen.to_string() : std::string("off")) +
         "; metrics on " + c.metrics.listen.to_string() + "\n";
  out += std::string("peers read ") + peers_read_name(c.control.peers_read) + " runs\n";
  out += "state dir " + or_auto(c.state_dir) + "; log level " + log::level_name(c.log_level) + "\n";
  out += "plans:";
  if (c.plans.empty()) out += " none";
  bool first = true;
  for (const auto& [name, plan] : c.plans) {
    out += std::string(first ? " " : ", ") + name + " (";
    for (std::size_t i = 0; i < plan.phases.size(); ++i) {
      out += (i ? ", " : "") + plan.phases[i].phase;
    }
    out += "; overhead " + bytes(plan.overhead_bytes) + ")";
    first = false;
  }
  out += "\nphase gaps:";
  if (c.phase_gaps.empty()) out += " none";
  for (std::size_t i = 0; i < c.phase_gaps.size(); ++i) {
    out += std::string(i ? ", " : " ") + c.phase_gaps[i].name() +
           " <= " + format_duration(c.phase_gaps[i].max);
  }
  char headroom[16];
  std::snprintf(headroom, sizeof headroom, "%g%%", c.headroom.warn_fraction * 100);
  out +=
      "\nthresholds: growth " + threshold(c.growth.min_bytes, c.growth.min_model_copies, "/round") +
      ", runaway " +
      threshold(c.growth.runaway_bytes_per_second, c.growth.runaway_model_copies_per_second, "/s") +
      ", release " + threshold(c.release.slack_bytes, c.release.slack_model_copies) + " within " +
      format_duration(c.release.grace) + ", headroom " + headroom + ", lease " +
      format_duration(c.admission.lease);
  if (!c.watch.empty()) {
    out += "\nwatching PIDs:";
    for (std::size_t i = 0; i < c.watch.size(); ++i) {
      const auto scope = c.watch_scopes.find(c.watch[i]);
      out += std::string(i ? ", " : " ") +
             (scope == c.watch_scopes.end() ? "" : std::string(scope_name(scope->second)) + ":") +
             std::to_string(c.watch[i]);
    }
  }
  return out;
}

}  // namespace ramguard
