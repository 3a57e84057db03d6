#include "verdicts/runaway.hpp"

#include <vector>

#include "ramguard/base/units.hpp"
#include "verdicts/describe.hpp"
#include "verdicts/fit.hpp"

namespace ramguard {

namespace {

LineFit fit_readings(std::span<const MemoryReading> r, const Instant& origin) {
  std::vector<double> x, y;
  for (const auto& m : r) {
    x.push_back(seconds_between(origin, m.at));
    y.push_back(static_cast<double>(m.counted_bytes()));
  }
  return fit_line(x, y);
}

}  // namespace

RunawayAssessment assess_runaway(std::span<const MemoryReading> readings, const std::string& phase,
                                 std::uint32_t round, std::uint64_t model_bytes,
                                 const DetectorParams& params) {
  RunawayAssessment a;
  if (readings.size() < 2) return a;
  const Instant last = readings.back().at;
  // The window: the newest readings covering runaway_min_seconds, starting at the last
  // reading at or before (last - min_seconds) so the span is long enough when data allows.
  std::size_t lo = 0;
  for (std::size_t k = readings.size(); k-- > 0;) {
    if (seconds_between(readings[k].at, last) >= params.runaway_min_seconds) {
      lo = k;
      break;
    }
  }
  const auto window = readings.subspan(lo);
  const Instant origin = window.front().at;
  a.window_seconds = seconds_between(origin, last);
  a.from_bytes = window.front().counted_bytes();
  a.to_bytes = window.back().counted_bytes();
  const LineFit fit = fit_readings(window, origin);
  a.slope_bytes_per_second = fit.slope;
  if (window.size() < 3 || a.window_seconds < params.runaway_min_seconds) return a;
  if (fit.slope < params.runaway_bytes_per_second) return a;

  // Sustained: split at the middle in time; each half must climb too.
  const double mid = a.window_seconds / 2;
  std::size_t split = 0;
  while (split < window.size() && seconds_between(origin, window[split].at) <= mid) ++split;
  const auto first = window.subspan(0, split);
  const auto second = window.subspan(split > 0 ? split - 1 : 0);  // share the middle reading
  const double half_rate = 0.5 * params.runaway_bytes_per_second;
  if (first.size() < 2 || second.size() < 2) return a;
  if (fit_readings(first, origin).slope < half_rate) return a;
  if (fit_readings(second, origin).slope < half_rate) return a;

  a.runaway = true;
  const double grown = static_cast<double>(a.to_bytes) - static_cast<double>(a.from_bytes);
  std::map<std::string, double> figures{
      {"slope_bytes_per_second", fit.slope},
      {"window_seconds", a.window_seconds},
      {"from_bytes", static_cast<double>(a.from_bytes)},
      {"to_bytes", static_cast<double>(a.to_bytes)},
      {"threshold_bytes_per_second", params.runaway_bytes_per_second},
  };
  add_copies_figure(figures, "copies_grown", grown, model_bytes);
  std::string where = phase.empty() ? "between phases" : "during " + phase;
  std::string summary =
      "Runaway growth " + where + " in round " + std::to_string(round) + ": " +
      format_bytes(fit.slope) + "/s for " + format_seconds(a.window_seconds) +
      ", counted memory (anon + shmem + swap) " + format_bytes(static_cast<double>(a.from_bytes)) +
      " -> " + format_bytes(static_cast<double>(a.to_bytes)) + copies_note(grown, model_bytes) +
      " (yardstick: rate, at least " + format_bytes(params.runaway_bytes_per_second) +
      "/s; no plan for this run).";
  a.verdict = make_verdict(verdict_kind::kRunaway, Severity::kWarning, false, round, phase,
                           std::move(summary), std::move(figures), last);
  return a;
}

}  // namespace ramguard
