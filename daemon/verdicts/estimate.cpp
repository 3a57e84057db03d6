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
  // Severity follows consequence: a few percent over, with headroom left, is calibration news
  // (info); past the documented ratio, or into the last tenth of the budget (where another
  // Load admitted beside it would have gone over), it is a warning.
  const double budget = static_cast<double>(params.budget_bytes);
  const bool past_ratio = a.ratio > kEstimateWarnRatio;
  const bool into_headroom =
      params.budget_bytes > 0 && peak > params.headroom_warn_fraction * budget;
  const bool warn = !a.within && (past_ratio || into_headroom);
  std::string consequence;
  if (!a.within) {
    consequence = past_ratio ? "; more than " + fixed(kEstimateWarnRatio, 2) +
                                   "x the estimate: a Load admitted beside it on that estimate "
                                   "could have gone over"
                  : into_headroom
                      ? "; it reached " + fixed(100 * peak / budget, 0) + "% of the " +
                            format_bytes(budget) + " " + params.budget_name +
                            ": a Load admitted beside it could have gone over"
                      : "; within " + fixed(kEstimateWarnRatio, 2) + "x the estimate and under " +
                            fixed(100 * params.headroom_warn_fraction, 0) + "% of the " +
                            params.budget_name + ", so only the next estimate needs it";
  }
  std::string summary =
      (a.within ? "Estimate held: "
                : (warn ? "Estimate exceeded: " : "Estimate slightly exceeded: ")) +
      peak_text + " of counted memory against the " + format_bytes(estimate) + " estimate (ratio " +
      fixed(a.ratio, 2) + ")" + consequence + "; suggested estimate for the next Load " +
      format_bytes(static_cast<double>(a.suggested_bytes)) + " (peak x " +
      fixed(params.calibration_factor, 2) + ").";
  a.verdict =
      make_verdict(verdict_kind::kEstimateAccuracy, warn ? Severity::kWarning : Severity::kInfo,
                   !warn, 0, "", std::move(summary),
                   {{"peak_bytes", peak},
                    {"estimate_bytes", estimate},
                    {"ratio", a.ratio},
                    {"warn_ratio", kEstimateWarnRatio},
                    {"suggested_bytes", static_cast<double>(a.suggested_bytes)},
                    {"suggested_peak_factor", params.calibration_factor},
                    {"peak_exact", peak_exact ? 1.0 : 0.0}},
                   at);
  return a;
}

}  // namespace ramguard
