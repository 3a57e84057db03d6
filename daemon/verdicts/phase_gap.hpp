#pragma once
// Phase gaps: for each configured rule (say aggregation.end -> synchronization.begin <= 10 s),
// the interval from each `from` mark to the next `to` mark (monotonic time), per round. A
// `from` mark followed by another `from` before any `to` is superseded by the later one; a
// `from` with no `to` yet is not measured. All gaps are returned (reports show them); the
// verdicts are only for gaps above their rule's max_seconds.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/ledger.hpp"
#include "verdicts/params.hpp"

namespace ramguard {

struct PhaseGap {
  std::size_t rule_index = 0;
  std::string rule;         // "aggregation.end -> synchronization.begin"
  std::uint32_t round = 0;  // the round of the `from` mark
  double seconds = 0;
  double max_seconds = 0;
  bool over = false;
  Instant from_at, to_at;
};

struct PhaseGapAssessment {
  std::vector<PhaseGap> gaps;     // in mark order, per rule
  std::vector<Verdict> verdicts;  // one per gap above its max
  double worst_seconds = 0;       // largest gap measured, 0 when none
};

PhaseGapAssessment measure_phase_gaps(std::span<const MarkRecord> marks,
                                      const DetectorParams& params);

}  // namespace ramguard
