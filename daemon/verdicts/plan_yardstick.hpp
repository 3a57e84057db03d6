#pragma once
// Verdicts that know the plan. A run admitted with a memory plan says how much each phase is
// expected to hold; growth inside a phase is judged against that (and, once known, against the
// same phase's exact peak in earlier rounds) instead of a bare rate: a healthy aggregation of a
// large model grows fast for seconds, exactly as planned, and must not be called runaway.
// The same yardstick warns at a phase's begin mark when the phase is planned past the budget,
// before the memory is allocated.

#include <algorithm>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "model/reading.hpp"
#include "model/verdict.hpp"
#include "verdicts/params.hpp"
#include "verdicts/runaway.hpp"

namespace ramguard {

// What a phase may hold, in RSS. Runaway is judged against limit_bytes(): the larger of what
// admission reserved for the run (baseline + the plan's largest phase: a plan is reliable about
// its peak, less so about every phase's persistent states) and the same phase's exact peak in
// earlier rounds; source() says which one set it. The forecast at a phase's begin uses that
// phase's own planned level (plan_bytes).
struct PhaseYardstick {
  std::uint64_t plan_bytes = 0;          // baseline + this phase's live sum and overhead
  std::uint64_t plan_live_bytes = 0;     // this phase's live sum and overhead alone
  std::uint64_t reserved_bytes = 0;      // baseline + the admitted estimate
  std::uint64_t earlier_peak_bytes = 0;  // the phase's exact peak in earlier rounds; 0: none
  std::uint64_t limit_bytes() const {
    return std::max({plan_bytes, reserved_bytes, earlier_peak_bytes});
  }
  const char* source() const {
    return earlier_peak_bytes > std::max(plan_bytes, reserved_bytes) ? "its peak in earlier rounds"
                                                                     : "the plan";
  }
};

// Runaway beyond the plan: the newest two readings since the last mark are both above the
// yardstick and still climbing at least at growth.runaway_bytes_per_second, or both more than
// past_plan_tolerance_bytes above it at any rate ("past the plan"). Growth that stays within it
// is never runaway, whatever its rate. `phase` empty: between phases (the yardstick is
// then the whole plan's estimate).
// How far past the yardstick a phase may sit, at any rate, before it is said during the phase:
// the larger of a quarter of the phase's planned live sum and half a model copy (without a
// model size: growth_min_bytes).
double past_plan_tolerance_bytes(const PhaseYardstick& yardstick, std::uint64_t model_bytes,
                                 const DetectorParams& params);

RunawayAssessment assess_runaway_beyond_plan(std::span<const MemoryReading> readings_since_mark,
                                             const PhaseYardstick& yardstick,
                                             const std::string& phase, std::uint32_t round,
                                             std::uint64_t model_bytes,
                                             const DetectorParams& params);

// The opening every forecast at a begin mark shares: "Forecast at the begin of aggregation in
// round 2: the plan expects counted memory to reach 6.00 GB (baseline + 4.00 GB (4.00 model
// copies))".
std::string forecast_opening(const PhaseYardstick& yardstick, const std::string& phase,
                             std::uint32_t round, std::uint64_t model_bytes);

// At a phase's begin mark: over_budget when the planned level passes the budget, headroom when
// it passes headroom_warn_fraction of it; nothing otherwise. Figure `forecast` = 1.
std::optional<Verdict> forecast_phase(const PhaseYardstick& yardstick, const std::string& phase,
                                      std::uint32_t round, std::uint64_t model_bytes, Instant at,
                                      const DetectorParams& params);

}  // namespace ramguard
