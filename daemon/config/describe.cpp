#include "config/describe.hpp"

#include <cstdio>

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

}  // namespace

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
