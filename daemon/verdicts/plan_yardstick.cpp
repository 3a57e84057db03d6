#include "verdicts/plan_yardstick.hpp"

#include <algorithm>

#include "ramguard/base/units.hpp"
#include "verdicts/describe.hpp"

namespace ramguard {

RunawayAssessment assess_runaway_beyond_plan(std::span<const MemoryReading> readings,
                                             const PhaseYardstick& yardstick,
                                             const std::string& phase, std::uint32_t round,
                                             std::uint64_t model_bytes,
                                             const DetectorParams& params) {
  RunawayAssessment a;
  if (readings.size() < 2) return a;
  const MemoryReading& previous = readings[readings.size() - 2];
  const MemoryReading& last = readings.back();
  const std::uint64_t limit = yardstick.limit_bytes();
  // Judged on the memory that counts: page cache written meanwhile (a checkpoint) is no runaway.
  a.from_bytes = previous.counted_bytes();
  a.to_bytes = last.counted_bytes();
  a.window_seconds = seconds_between(previous.at, last.at);
  if (a.window_seconds > 0) {
    a.slope_bytes_per_second =
        (static_cast<double>(a.to_bytes) - static_cast<double>(a.from_bytes)) / a.window_seconds;
  }
  if (a.from_bytes <= limit || a.to_bytes <= limit) return a;
  // Above and still climbing fast, or well past the plan at any rate (two readings in a row
  // more than past_plan_tolerance_bytes above it): a phase that overshoots its plan is said
  // while it runs. A little above and level is the estimate's news (estimate_accuracy).
  const double tolerance = past_plan_tolerance_bytes(yardstick, model_bytes, params);
  const bool climbing = a.slope_bytes_per_second >= params.runaway_bytes_per_second;
  const bool well_past =
      static_cast<double>(a.from_bytes) > static_cast<double>(limit) + tolerance &&
      static_cast<double>(a.to_bytes) > static_cast<double>(limit) + tolerance;
  if (!climbing && !well_past) return a;
  a.runaway = true;
  const double over = static_cast<double>(a.to_bytes) - static_cast<double>(limit);
  std::map<std::string, double> figures{
      {"limit_bytes", static_cast<double>(limit)},
      {"plan_bytes", static_cast<double>(yardstick.plan_bytes)},
      {"reserved_bytes", static_cast<double>(yardstick.reserved_bytes)},
      {"earlier_peak_bytes", static_cast<double>(yardstick.earlier_peak_bytes)},
      {"counted_bytes", static_cast<double>(a.to_bytes)},
      {"rss_bytes", static_cast<double>(last.rss_bytes)},
      {"file_bytes", static_cast<double>(last.file_bytes)},
      {"over_bytes", over},
      {"slope_bytes_per_second", a.slope_bytes_per_second},
      {"tolerance_bytes", tolerance},
  };
  add_copies_figure(figures, "copies_over", over, model_bytes);
  const std::string where = phase.empty() ? "between phases" : "during " + phase;
  const std::string what =
      yardstick.earlier_peak_bytes > std::max(yardstick.plan_bytes, yardstick.reserved_bytes)
          ? "this phase holds"
          : "was admitted for this run";
  std::string summary =
      (climbing ? "Runaway growth " : "Past the plan ") + where + " in round " +
      std::to_string(round) + ": counted memory (anon + shmem + swap) " +
      format_bytes(static_cast<double>(a.to_bytes)) + " passed " +
      format_bytes(static_cast<double>(limit)) + ", what " + yardstick.source() + " says " + what +
      ", by " + format_bytes(over) + copies_note(over, model_bytes) +
      (climbing ? ", and is still climbing at " + format_bytes(a.slope_bytes_per_second) + "/s"
                : ", more than " + format_bytes(tolerance) +
                      " above it in two readings in a row, climbing at " +
                      format_bytes(a.slope_bytes_per_second) + "/s") +
      " (yardstick: " + yardstick.source() + ").";
  a.verdict = make_verdict(verdict_kind::kRunaway, Severity::kWarning, false, round, phase,
                           std::move(summary), std::move(figures), last.at);
  return a;
}

double past_plan_tolerance_bytes(const PhaseYardstick& yardstick, std::uint64_t model_bytes,
                                 const DetectorParams& params) {
  const double by_plan = 0.25 * static_cast<double>(yardstick.plan_live_bytes);
  const double by_model = model_bytes > 0 ? 0.5 * static_cast<double>(model_bytes)
                                          : static_cast<double>(params.growth_min_bytes);
  return std::max(by_plan, by_model);
}

std::string forecast_opening(const PhaseYardstick& yardstick, const std::string& phase,
                             std::uint32_t round, std::uint64_t model_bytes) {
  const double live = static_cast<double>(yardstick.plan_live_bytes);
  return "Forecast at the begin of " + phase + " in round " + std::to_string(round) +
         ": the plan expects counted memory to reach " +
         format_bytes(static_cast<double>(yardstick.plan_bytes)) + " (baseline + " +
         format_bytes(live) + copies_note(live, model_bytes) + ")";
}

std::optional<Verdict> forecast_phase(const PhaseYardstick& yardstick, const std::string& phase,
                                      std::uint32_t round, std::uint64_t model_bytes, Instant at,
                                      const DetectorParams& p) {
  const double budget = static_cast<double>(p.budget_bytes);
  const double planned = static_cast<double>(yardstick.plan_bytes);
  if (p.budget_bytes == 0 || planned <= p.headroom_warn_fraction * budget) return std::nullopt;
  const bool over = planned > budget;
  std::map<std::string, double> figures{
      {"forecast", 1},
      {"planned_bytes", planned},
      {"plan_live_bytes", static_cast<double>(yardstick.plan_live_bytes)},
      {"budget_bytes", budget},
      {"fraction", planned / budget},
  };
  add_copies_figure(figures, "planned_copies", static_cast<double>(yardstick.plan_live_bytes),
                    model_bytes);
  std::string summary = forecast_opening(yardstick, phase, round, model_bytes) + ", " +
                        (over ? "over the " + format_bytes(budget) + " " + p.budget_name + " by " +
                                    format_bytes(planned - budget)
                              : fixed(100 * planned / budget, 0) + "% of the " +
                                    format_bytes(budget) + " " + p.budget_name) +
                        " (yardstick: the plan).";
  return make_verdict(over ? verdict_kind::kOverBudget : verdict_kind::kHeadroom,
                      over ? Severity::kCritical : Severity::kWarning, false, round, phase,
                      std::move(summary), std::move(figures), at);
}

}  // namespace ramguard
