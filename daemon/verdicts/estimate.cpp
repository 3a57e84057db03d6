#include "verdicts/estimate.hpp"

#include <cmath>

#include "ramguard/base/units.hpp"
#include "verdicts/describe.hpp"

namespace ramguard {

std::optional<EstimateAssessment> assess_estimate(std::uint64_t peak_bytes, bool peak_exact,
                                                  std::uint64_t estimate_bytes, Instant at,
                                                  const DetectorParams& params) {
  if (estimate_bytes == 0 || peak_bytes == 0) return std::nullopt;
  EstimateAssessment a;
  const double peak = static_cast<double>(peak_bytes);
  const double estimate = static_cast<double>(estimate_bytes);
  a.ratio = peak / estimate;
  a.within = peak_bytes <= estimate_bytes;
  a.suggested_bytes = static_cast<std::uint64_t>(std::llround(peak * params.calibration_factor));
  const std::string peak_text =
      std::string(peak_exact ? "exact peak " : "sampled peak ") + format_bytes(peak);
  std::string summary = (a.within ? "Estimate held: " : "Estimate exceeded: ") + peak_text +
                        " against the " + format_bytes(estimate) + " estimate (ratio " +
                        fixed(a.ratio, 2) + "); suggested estimate for the next Load " +
                        format_bytes(static_cast<double>(a.suggested_bytes)) + " (peak x " +
                        fixed(params.calibration_factor, 2) + ").";
  a.verdict =
      make_verdict(verdict_kind::kEstimateAccuracy, a.within ? Severity::kInfo : Severity::kWarning,
                   a.within, 0, "", std::move(summary),
                   {{"peak_bytes", peak},
                    {"estimate_bytes", estimate},
                    {"ratio", a.ratio},
                    {"suggested_bytes", static_cast<double>(a.suggested_bytes)},
                    {"peak_exact", peak_exact ? 1.0 : 0.0}},
                   at);
  return a;
}

}  // namespace ramguard
