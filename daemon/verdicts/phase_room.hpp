#pragma once
// The forecast at a phase's begin mark against the machine, not only the budget: what the node
// has available now and the limit of the run's memory cgroup. Admission checked both when the
// Load was admitted; by a later phase another process may have taken the node's memory, or the
// cgroup's limit may have been lowered. Said before the phase allocates, so the coordinator (or
// its operator) can stop before the kernel's OOM killer does.

#include <cstdint>
#include <optional>
#include <string>

#include "model/verdict.hpp"
#include "verdicts/params.hpp"
#include "verdicts/plan_yardstick.hpp"

namespace ramguard {

// What the machine can give the run now, measured by the caller at the begin mark.
struct PhaseRoom {
  std::optional<std::uint64_t> node_available_bytes;  // MemAvailable
  std::optional<std::uint64_t> cgroup_limit_bytes;    // smallest limit up the run's cgroup
  std::string cgroup_dir;                             // whose limit that is
};

// Which cap a room forecast is about.
enum class RoomCap { kNode, kCgroup };
const char* room_cap_name(RoomCap cap);  // "node", "cgroup"

// over_budget (critical) when the planned level passes the cgroup limit, or when what the phase
// still has to add (planned level - counted_now_bytes) is more than the node has available;
// headroom (warning) past params.headroom_warn_fraction of either; nothing otherwise. Figures:
// forecast = 1, planned_bytes, counted_bytes, cap_bytes, and cap_node or cap_cgroup = 1.
std::optional<Verdict> forecast_phase_room(const PhaseYardstick& yardstick, RoomCap cap,
                                           const PhaseRoom& room, std::uint64_t counted_now_bytes,
                                           const std::string& phase, std::uint32_t round,
                                           std::uint64_t model_bytes, Instant at,
                                           const DetectorParams& params);

}  // namespace ramguard
