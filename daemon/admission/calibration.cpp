#include "admission/calibration.hpp"

#include <cmath>
#include <cstdio>

#include "ramguard/base/units.hpp"

namespace ramguard {
namespace {

constexpr double kTwoPow64 = 18446744073709551616.0;

Result<EstimateChoice> calibrated_choice(const MeasuredPeak& peak, double factor,
                                         const std::string& plan) {
  Result<std::uint64_t> bytes = calibrated_estimate(peak.peak_bytes, factor);
  if (!bytes)
    return Error{"calibrated estimate for run " + peak.run_id + ": " + bytes.error().message};
  char factor_text[32];
  std::snprintf(factor_text, sizeof factor_text, "%.2f", factor);
  EstimateChoice choice;
  choice.bytes = *bytes;
  choice.source = EstimateSource{EstimateKind::kCalibrated, plan, peak.run_id};
  const std::string measured =
      peak.origin.empty() ? "measured peak " + format_bytes(static_cast<double>(peak.peak_bytes)) +
                                " of run " + peak.run_id
                          : "calibrated: " + peak.origin;
  choice.detail =
      measured + " x " + factor_text + " = " + format_bytes(static_cast<double>(*bytes));
  return choice;
}

}  // namespace

Result<std::uint64_t> calibrated_estimate(std::uint64_t peak_bytes, double factor) {
  if (peak_bytes == 0) return Error{"measured peak is 0 bytes; nothing to calibrate from"};
  if (!std::isfinite(factor) || factor < 1.0 || factor > kMaxCalibrationFactor) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "calibration factor must be between 1 and %g, got %g",
                  kMaxCalibrationFactor, factor);
    return Error{buf};
  }
  const double bytes = std::ceil(static_cast<double>(peak_bytes) * factor);
  if (bytes >= kTwoPow64) return Error{"calibrated estimate overflows 64 bits"};
  return static_cast<std::uint64_t>(bytes);
}

Result<EstimateChoice> choose_estimate(const EstimateInputs& inputs) {
  if (inputs.given_bytes && *inputs.given_bytes == 0) {
    return Error{"estimate_bytes is 0; give a positive estimate or a model and a plan"};
  }
  const std::string plan = inputs.plan_estimate ? inputs.plan_estimate->plan : "";
  if (inputs.use_calibrated && inputs.peak_on_record) {
    auto choice = calibrated_choice(*inputs.peak_on_record, inputs.factor, plan);
    // Never below the plan's own estimate without saying so: the measurement wins, in the open.
    if (choice && inputs.plan_estimate && choice->bytes < inputs.plan_estimate->bytes) {
      choice->detail += ", below the plan's " +
                        format_bytes(static_cast<double>(inputs.plan_estimate->bytes)) + " (plan " +
                        plan + "): the measured peak is the better evidence";
    }
    return choice;
  }
  if (inputs.given_bytes) {
    return EstimateChoice{*inputs.given_bytes, EstimateSource{EstimateKind::kGiven, plan, ""},
                          "given " + format_bytes(static_cast<double>(*inputs.given_bytes))};
  }
  if (inputs.plan_estimate) {
    return EstimateChoice{inputs.plan_estimate->bytes,
                          EstimateSource{EstimateKind::kPlan, plan, ""},
                          describe_estimate(*inputs.plan_estimate)};
  }
  if (inputs.peak_on_record) {
    return calibrated_choice(*inputs.peak_on_record, inputs.factor, plan);
  }
  return Error{inputs.use_calibrated
                   ? "no estimate: use_calibrated is set but this job has no measured peak on "
                     "record; give estimate_bytes, or a model and a plan"
                   : "no estimate: give estimate_bytes, or a model and a plan"};
}

}  // namespace ramguard
