#pragma once
// Facts derived from a run's status that several renderers show: gaps between consecutive phases,
// the release verdict, the estimate ratio.

#include <cstdint>
#include <string>
#include <vector>

#include "ramguard.pb.h"

namespace ramguard::report {

// The interval from one phase's end to the next phase's begin within the same round, e.g.
// aggregation end -> synchronization begin. Overlapping (nested) phases have no gap.
struct PhaseGap {
  std::uint32_t round = 0;
  std::string from_phase;
  std::string to_phase;
  double seconds = 0;
};

std::vector<PhaseGap> phase_gaps(const v1::RunStatus& run);

// The largest gap: configured phase_gap verdicts first (their "gap_seconds"/"seconds" figure),
// else the measured gaps. 0 when there is none.
double worst_gap_seconds(const v1::RunStatus& run);

// The latest verdict of a kind that was not cleared, or nullptr.
const v1::Verdict* find_verdict(const v1::RunStatus& run, const std::string& kind);

// peak / estimate; 0 when there is no estimate.
double estimate_ratio(const v1::RunStatus& run);

// Number of rounds the run has reached (marks or boundary readings).
std::uint32_t rounds_seen(const v1::RunStatus& run);

// First figure among `names` present in the verdict, else `fallback`.
double figure(const v1::Verdict& verdict, std::initializer_list<const char*> names,
              double fallback);

}  // namespace ramguard::report
