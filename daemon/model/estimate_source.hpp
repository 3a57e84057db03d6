#pragma once
// Where an admitted estimate came from, typed: the reservation keeps it (in memory and in the
// ledger), so a run that claims it knows its plan, also after a restart and also when the
// figure was calibrated from history (the plan's phases stay the run's yardstick).
// text() is the wire and display form the protocol has always carried: "given",
// "plan:fedavg", "calibrated:r-20261203-0001".

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ramguard {

enum class EstimateKind : std::uint8_t { kGiven, kPlan, kCalibrated };

inline const char* estimate_kind_name(EstimateKind kind) {
  switch (kind) {
    case EstimateKind::kPlan:
      return "plan";
    case EstimateKind::kCalibrated:
      return "calibrated";
    case EstimateKind::kGiven:
      break;
  }
  return "given";
}

inline std::optional<EstimateKind> parse_estimate_kind(std::string_view name) {
  if (name == "given") return EstimateKind::kGiven;
  if (name == "plan") return EstimateKind::kPlan;
  if (name == "calibrated") return EstimateKind::kCalibrated;
  return std::nullopt;
}

struct EstimateSource {
  EstimateKind kind = EstimateKind::kGiven;
  std::string plan;    // the plan the Load declared, whatever set the figure; "" without one
  std::string run_id;  // kCalibrated: the run whose measured peak it is

  std::string text() const {
    switch (kind) {
      case EstimateKind::kPlan:
        return "plan:" + plan;
      case EstimateKind::kCalibrated:
        return "calibrated:" + run_id;
      case EstimateKind::kGiven:
        break;
    }
    return "given";
  }
  friend bool operator==(const EstimateSource&, const EstimateSource&) = default;
};

}  // namespace ramguard
