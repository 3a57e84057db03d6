#pragma once
// Release after the run: does RSS come back to the pre-run baseline? The run passes when a
// reading taken after the end (within release_grace_seconds) is <= baseline +
// release_slack_bytes, or the process exited (its memory went back to the system); it fails
// when the grace period expires first, with the bytes (and model copies) still held above the
// baseline in the last reading inside the grace period. Until then it is pending.

#include <cstdint>
#include <optional>
#include <span>

#include "model/reading.hpp"
#include "model/verdict.hpp"
#include "verdicts/params.hpp"

namespace ramguard {

enum class ReleaseState { kPending, kPassed, kFailed };
const char* release_state_name(ReleaseState s);

struct ReleaseInput {
  MemoryReading baseline;                    // at run start, before Load
  Instant ended;                             // run-end mark
  std::span<const MemoryReading> after_end;  // readings at or after `ended`, oldest first
  Instant now;                               // the time of this evaluation
  std::optional<Instant> exited;             // when the process exited, if it did
  std::uint64_t model_bytes = 0;
};

struct ReleaseAssessment {
  ReleaseState state = ReleaseState::kPending;
  double seconds_taken = 0;        // passed: end -> first reading within slack (or exit)
  std::uint64_t limit_bytes = 0;   // baseline + slack
  std::uint64_t last_bytes = 0;    // latest reading considered
  double held_bytes = 0;           // failed: last reading - baseline
  std::optional<Verdict> verdict;  // set once passed or failed
};

ReleaseAssessment assess_release(const ReleaseInput& input, const DetectorParams& params);

}  // namespace ramguard
