#pragma once
// Calibrated estimates and the rule that picks a Load's estimate. Pure functions over values:
// the store supplies the job's measured peak on record, the estimator the plan's estimate.

#include <cstdint>
#include <optional>
#include <string>

#include "admission/estimator.hpp"
#include "model/estimate_source.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

// A measured peak is a floor, not an estimate: loads vary, so the suggestion adds 10%.
inline constexpr double kDefaultCalibrationFactor = 1.1;
inline constexpr double kMaxCalibrationFactor = 10.0;

// The largest measured peak of a job's finished runs, as the store has it.
// From another node (fleet/): run_id names the source ("fleet:node-a") and `origin` says where
// the figure comes from in the reason ("fleet peak 7.90 GB over 30 d, node-a").
struct MeasuredPeak {
  std::string run_id;
  std::uint64_t peak_bytes = 0;
  std::string origin;  // "" for a run of this node's ledger
};

// peak x factor, rounded up. Errors: a zero peak, a factor outside [1, 10] (a factor below 1
// would admit less than was measured), a product beyond 64 bits.
Result<std::uint64_t> calibrated_estimate(std::uint64_t peak_bytes,
                                          double factor = kDefaultCalibrationFactor);

struct EstimateInputs {
  std::optional<std::uint64_t> given_bytes;  // the request's estimate_bytes
  std::optional<Estimate> plan_estimate;     // estimate_from_plan for the request's plan
  std::optional<MeasuredPeak> peak_on_record;
  bool use_calibrated = false;  // requested by the client or set in the configuration
  double factor = kDefaultCalibrationFactor;
};

struct EstimateChoice {
  std::uint64_t bytes = 0;
  EstimateSource source;  // calibrated ones keep the request's plan
  std::string detail;     // how the figure came about, for the reply's reason
};

// Preference: given bytes, then the plan, then the calibrated estimate. When use_calibrated is
// set and a peak is on record, the calibrated estimate replaces a given or plan one (the
// measurement is better evidence than a declaration). A peak on record is also the fallback when
// the request carries nothing else. Errors: no estimate at all, a zero given estimate, and the
// calibration errors above.
Result<EstimateChoice> choose_estimate(const EstimateInputs& inputs);

}  // namespace ramguard
