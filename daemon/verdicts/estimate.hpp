#pragma once
// Estimate accuracy: the run's measured peak against the admitted estimate, with the suggested
// estimate for the next Load of the job (peak x calibration_factor). Info when the peak stayed
// within the estimate, or went over it by at most kEstimateWarnRatio while staying under the
// headroom fraction of the budget; a warning past either, where a Load admitted beside it on
// the estimate could have gone over.

#include <cstdint>
#include <optional>

#include "model/verdict.hpp"
#include "verdicts/params.hpp"

namespace ramguard {

// Peak / estimate above which an exceeded estimate is a warning (docs/verdicts.md).
inline constexpr double kEstimateWarnRatio = 1.15;

struct EstimateAssessment {
  double ratio = 0;  // peak / estimate
  std::uint64_t suggested_bytes = 0;
  bool within = true;
  Verdict verdict;
};

// nullopt when there was no estimate (0) or no peak was measured (0).
std::optional<EstimateAssessment> assess_estimate(std::uint64_t peak_bytes, bool peak_exact,
                                                  std::uint64_t estimate_bytes, Instant at,
                                                  const DetectorParams& params);

}  // namespace ramguard
