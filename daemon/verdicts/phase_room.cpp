#include "verdicts/phase_room.hpp"

#include <map>

#include "ramguard/base/units.hpp"
#include "verdicts/describe.hpp"

namespace ramguard {

const char* room_cap_name(RoomCap cap) {
  return cap == RoomCap::kNode ? "node" : "cgroup";
}

std::optional<Verdict> forecast_phase_room(const PhaseYardstick& yardstick, RoomCap cap,
                                           const PhaseRoom& room, std::uint64_t counted_now_bytes,
                                           const std::string& phase, std::uint32_t round,
                                           std::uint64_t model_bytes, Instant at,
                                           const DetectorParams& p) {
  const double planned = static_cast<double>(yardstick.plan_bytes);
  const double counted = static_cast<double>(counted_now_bytes);
  // The cgroup's limit bounds the level; the node's free memory bounds what is still to come.
  double demand = 0;
  double cap_bytes = 0;
  if (cap == RoomCap::kCgroup) {
    if (!room.cgroup_limit_bytes) return std::nullopt;
    demand = planned;
    cap_bytes = static_cast<double>(*room.cgroup_limit_bytes);
  } else {
    if (!room.node_available_bytes) return std::nullopt;
    demand = planned > counted ? planned - counted : 0;
    cap_bytes = static_cast<double>(*room.node_available_bytes);
  }
  if (demand <= p.headroom_warn_fraction * cap_bytes) return std::nullopt;
  const bool over = demand > cap_bytes;
  std::map<std::string, double> figures{
      {"forecast", 1},
      {"planned_bytes", planned},
      {"counted_bytes", counted},
      {"cap_bytes", cap_bytes},
      {cap == RoomCap::kNode ? "cap_node" : "cap_cgroup", 1},
      {"fraction", cap_bytes > 0 ? demand / cap_bytes : 0},
  };
  add_copies_figure(figures, "planned_copies", static_cast<double>(yardstick.plan_live_bytes),
                    model_bytes);
  std::string summary = forecast_opening(yardstick, phase, round, model_bytes) + "; ";
  if (cap == RoomCap::kCgroup) {
    summary += (over ? "over the cgroup's limit " + format_bytes(cap_bytes) + " by " +
                           format_bytes(planned - cap_bytes)
                     : fixed(100 * planned / cap_bytes, 0) + "% of the cgroup's limit " +
                           format_bytes(cap_bytes)) +
               " (" + room.cgroup_dir + ")" +
               (over ? ", where the kernel's OOM killer ends it." : ".");
  } else {
    summary += "it holds " + format_bytes(counted) + " now, so the phase adds " +
               format_bytes(demand) + ", " +
               (over ? "more than the node's " + format_bytes(cap_bytes) +
                           " available (MemAvailable) by " + format_bytes(demand - cap_bytes) +
                           ": another process took the memory admission counted on."
                     : fixed(100 * demand / cap_bytes, 0) + "% of the node's " +
                           format_bytes(cap_bytes) + " available (MemAvailable).");
  }
  return make_verdict(over ? verdict_kind::kOverBudget : verdict_kind::kHeadroom,
                      over ? Severity::kCritical : Severity::kWarning, false, round, phase,
                      std::move(summary), std::move(figures), at);
}

}  // namespace ramguard
