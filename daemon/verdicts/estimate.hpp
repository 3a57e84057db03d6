#pragma once
// Estimate accuracy: the run's measured peak against the admitted estimate. Info when the
// peak stayed within the estimate, warning when it went above; the suggested estimate for the
// next Load of the job is peak x calibration_factor.

#include <cstdint>
#include <optional>

#include "model/verdict.hpp"
#include "verdicts/params.hpp"

namespace ramguard {

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
