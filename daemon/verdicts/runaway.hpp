#pragma once
// Runaway growth within a round: RSS climbing fast between marks, before any round boundary
// could show it. Least-squares slope of RSS over time (monotonic seconds: a wall-clock jump
// does not bend it) over the readings of the last runaway_min_seconds since the last mark.
// Runaway when that slope is >= runaway_bytes_per_second, the readings span at least
// runaway_min_seconds, and both halves of the window climb at >= half that rate (sustained
// growth, not one allocation step such as a model load).

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "model/reading.hpp"
#include "model/verdict.hpp"
#include "verdicts/params.hpp"

namespace ramguard {

struct RunawayAssessment {
  bool runaway = false;
  double slope_bytes_per_second = 0;  // over the judged window (0 with < 2 readings)
  double window_seconds = 0;
  std::uint64_t from_bytes = 0, to_bytes = 0;
  std::optional<Verdict> verdict;  // set when runaway
};

// `readings_since_mark`: readings taken since the last mark, oldest first (any order of
// sources). `phase`/`round`: where the run is now (phase may be empty between phases).
RunawayAssessment assess_runaway(std::span<const MemoryReading> readings_since_mark,
                                 const std::string& phase, std::uint32_t round,
                                 std::uint64_t model_bytes, const DetectorParams& params);

}  // namespace ramguard
