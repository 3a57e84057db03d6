#pragma once
// Release after the run: does counted memory come back to the pre-run baseline? The run passes
// when a reading taken after the end (within release_grace_seconds, and before any exit) is <=
// baseline + release_slack_bytes. An exit is the kernel's clean-up, not the application's
// release: a process that exits inside the grace is judged on its readings before the exit.
// Above the limit for longer than the settle window, then exited: failed, with what it held
// and for how long. Exited within the settle window (no settled reading): not verified, an
// info that is never a pass. Grace expired above the limit: failed, with the bytes (and model
// copies) still held in the last reading inside the grace. Until then it is pending.
//
// With the coordinator's end facts (EndFacts: allocator statistics, gc and trim probes) a
// failure is split into live objects, reference cycles and free memory the allocator keeps.
// When nearly all of what stays (>= 80 %) is the allocator's free memory, the application does
// not leak: the verdict says so at info severity and names the remedy (jemalloc, glibc
// tunables, malloc_trim). Live bytes left are still a leak (warning).

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "model/ledger.hpp"
#include "model/reading.hpp"
#include "model/verdict.hpp"
#include "verdicts/params.hpp"

namespace ramguard {

enum class ReleaseState { kPending, kPassed, kFailed, kNotVerified };
const char* release_state_name(ReleaseState s);

struct ReleaseInput {
  MemoryReading baseline;                    // at run start, before Load
  Instant ended;                             // run-end mark
  std::span<const MemoryReading> after_end;  // readings at or after `ended`, oldest first
  Instant now;                               // the time of this evaluation
  std::optional<Instant> exited;             // when the process exited, if it did
  std::uint64_t model_bytes = 0;
  std::optional<EndFacts> facts;  // measured by the coordinator at the run's end
  // The boundary settle window: an exit sooner after the end leaves the release unverified.
  double settle_seconds = 3;
};

struct ReleaseAssessment {
  ReleaseState state = ReleaseState::kPending;
  double seconds_taken = 0;       // passed: end -> first reading within slack; exit: end -> exit
  std::uint64_t limit_bytes = 0;  // baseline + slack
  std::uint64_t last_bytes = 0;   // latest reading considered: its counted_bytes()
  std::uint64_t last_file_bytes = 0;  // and its page cache, named beside it
  double held_bytes = 0;              // failed: last reading - baseline
  // Failed with end facts: the split of held_bytes (live + allocator_free = held).
  double live_bytes = 0;
  double allocator_free_bytes = 0;
  bool allocator_retention = false;  // nearly all of held is the allocator's free memory
  std::optional<Verdict> verdict;    // set once passed or failed
};

// Share of what stays resident that must be the allocator's free memory to call it retention.
inline constexpr double kAllocatorRetentionShare = 0.8;

// What fits the allocator that kept the memory ("glibc", "jemalloc" or unknown).
std::string allocator_remedy(const std::string& allocator_name);

ReleaseAssessment assess_release(const ReleaseInput& input, const DetectorParams& params);

}  // namespace ramguard
