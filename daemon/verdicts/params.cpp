#include "verdicts/params.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "ramguard/base/units.hpp"

namespace ramguard {

std::string phase_gap_rule_name(const PhaseGapRule& rule) {
  return rule.from_phase + "." + mark_edge_name(rule.from_edge) + " -> " + rule.to_phase + "." +
         mark_edge_name(rule.to_edge);
}

namespace {

Status positive(const char* name, double value) {
  if (!std::isfinite(value) || value <= 0) {
    return Error{std::string("verdicts.") + name + " is " + std::to_string(value) +
                 "; it must be a positive number"};
  }
  return ok_status();
}

}  // namespace

bool uses_model_copies(const DetectorParams& p) {
  return p.growth_min_model_copies > 0 || p.runaway_model_copies_per_second > 0 ||
         p.release_slack_model_copies > 0;
}

DetectorParams resolve_model_copies(const DetectorParams& params, std::uint64_t model_bytes) {
  DetectorParams p = params;
  if (model_bytes == 0) return p;
  const auto model = static_cast<double>(model_bytes);
  if (p.growth_min_model_copies > 0) {
    p.growth_min_bytes =
        std::max<std::uint64_t>(1, std::llround(p.growth_min_model_copies * model));
    p.plateau_band_bytes = plateau_band_for(p.growth_min_bytes);
  }
  if (p.runaway_model_copies_per_second > 0) {
    p.runaway_bytes_per_second = p.runaway_model_copies_per_second * model;
  }
  if (p.release_slack_model_copies > 0) {
    p.release_slack_bytes =
        static_cast<std::uint64_t>(std::llround(p.release_slack_model_copies * model));
  }
  return p;
}

namespace {

// "40 MB/round (0.2 model copies)" where the threshold came from copies, the bytes otherwise.
std::string one_threshold(double resolved, double copies, bool from_copies, const char* per) {
  std::string out = format_bytes(resolved) + per;
  if (!from_copies) return out;
  char text[48];
  std::snprintf(text, sizeof text, " (%g model copies%s)", copies, per);
  return out + text;
}

}  // namespace

std::string describe_thresholds(const DetectorParams& configured, std::uint64_t model_bytes) {
  const DetectorParams p = resolve_model_copies(configured, model_bytes);
  const bool model = model_bytes > 0;
  std::string out =
      "growth " +
      one_threshold(static_cast<double>(p.growth_min_bytes), p.growth_min_model_copies,
                    model && p.growth_min_model_copies > 0, "/round") +
      ", runaway " +
      one_threshold(p.runaway_bytes_per_second, p.runaway_model_copies_per_second,
                    model && p.runaway_model_copies_per_second > 0, "/s") +
      " for " + format_seconds(p.runaway_min_seconds) + ", release slack " +
      one_threshold(static_cast<double>(p.release_slack_bytes), p.release_slack_model_copies,
                    model && p.release_slack_model_copies > 0, "") +
      " within " + format_seconds(p.release_grace_seconds);
  if (!model && uses_model_copies(configured)) {
    out +=
        " (in bytes: the run declared no model size, so thresholds in model copies cannot apply)";
  }
  return out;
}

Status validate_params(const DetectorParams& p) {
  const std::pair<const char*, double> positives[] = {
      {"budget_bytes", static_cast<double>(p.budget_bytes)},
      {"growth_min_bytes", static_cast<double>(p.growth_min_bytes)},
      {"runaway_bytes_per_second", p.runaway_bytes_per_second},
      {"runaway_min_seconds", p.runaway_min_seconds},
      {"release_grace_seconds", p.release_grace_seconds},
      {"headroom_warn_fraction", p.headroom_warn_fraction},
      {"calibration_factor", p.calibration_factor},
  };
  for (const auto& [name, value] : positives) {
    if (auto s = positive(name, value); !s) return s;
  }
  const std::pair<const char*, double> copies[] = {
      {"growth_min_model_copies", p.growth_min_model_copies},
      {"runaway_model_copies_per_second", p.runaway_model_copies_per_second},
      {"release_slack_model_copies", p.release_slack_model_copies},
  };
  for (const auto& [name, value] : copies) {
    if (!std::isfinite(value) || value < 0) {
      return Error{std::string("verdicts.") + name + " is " + std::to_string(value) +
                   "; it must be 0 (not set) or a positive number of model copies"};
    }
  }
  if (p.fit_rounds < 4) {
    return Error{"verdicts.fit_rounds is " + std::to_string(p.fit_rounds) +
                 "; it must be at least 4 (a leak needs 3 growth steps)"};
  }
  if (p.projection_fit_rounds < 4) {
    return Error{"verdicts.projection_fit_rounds is " + std::to_string(p.projection_fit_rounds) +
                 "; it must be at least 4"};
  }
  if (p.plateau_rounds < 2) {
    return Error{"verdicts.plateau_rounds is " + std::to_string(p.plateau_rounds) +
                 "; it must be at least 2"};
  }
  if (!(p.min_fit_r2 >= 0 && p.min_fit_r2 <= 1)) {
    return Error{"verdicts.min_fit_r2 is " + std::to_string(p.min_fit_r2) +
                 "; it must be between 0 and 1"};
  }
  if (p.headroom_warn_fraction > 1) {
    return Error{"verdicts.headroom_warn_fraction is " + std::to_string(p.headroom_warn_fraction) +
                 "; it must be in (0, 1]"};
  }
  if (p.plateau_band_bytes >= p.growth_min_bytes) {
    return Error{"verdicts.plateau_band_bytes (" + std::to_string(p.plateau_band_bytes) +
                 ") must be smaller than growth_min_bytes (" + std::to_string(p.growth_min_bytes) +
                 ")"};
  }
  for (const auto& rule : p.phase_gaps) {
    if (rule.from_phase.empty() || rule.to_phase.empty()) {
      return Error{"verdicts.phase_gaps: rule '" + phase_gap_rule_name(rule) +
                   "' needs both a from and a to phase"};
    }
    if (auto s = positive("phase_gaps.max_seconds", rule.max_seconds); !s) return s;
  }
  return ok_status();
}

}  // namespace ramguard
