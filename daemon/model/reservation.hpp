#pragma once
// An admitted estimate, held until its run ends or, unclaimed, until its lease runs out. One
// type from admission to the ledger and back: admission lists it, the registry hands it to
// observers, the store saves it, recovery restores it. Times are wall clock in milliseconds:
// the ledger keeps them across restarts, where the old process's monotonic time means nothing
// (admission itself times the lease on the monotonic clock).

#include <algorithm>
#include <cstdint>
#include <string>

#include "model/estimate_source.hpp"

namespace ramguard {

struct Reservation {
  std::string id;
  std::string job;
  std::uint64_t bytes = 0;
  EstimateSource source;        // a run claiming it after a restart still has its plan
  std::string run_id;           // empty until a run claims it
  std::uint32_t owner_uid = 0;  // the UID it was admitted for; older ledgers read as root's
  std::int64_t created_wall_ms = 0;
  std::int64_t expires_wall_ms = 0;  // the lease's end; it no longer applies once claimed
  friend bool operator==(const Reservation&, const Reservation&) = default;
};

// What is left of an unclaimed reservation's lease at `now_wall_ms`; 0 once claimed (it ends
// with its run) or expired.
inline double lease_left_seconds(const Reservation& r, std::int64_t now_wall_ms) {
  if (!r.run_id.empty()) return 0.0;
  return static_cast<double>(std::max<std::int64_t>(0, r.expires_wall_ms - now_wall_ms)) / 1000.0;
}

}  // namespace ramguard
