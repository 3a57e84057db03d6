#pragma once
// Builders for detector tests: floors in GiB or GB, readings on a timeline.

#include <chrono>
#include <cstdint>
#include <vector>

#include "verdicts/growth.hpp"

namespace ramguard::test {

inline constexpr double kGiB = 1024.0 * 1024 * 1024;
inline constexpr double kGB = 1e9;

inline Instant at_seconds(double s) {
  const auto ns = std::chrono::nanoseconds(static_cast<std::int64_t>(s * 1e9));
  return {std::chrono::seconds(1000) + ns, std::chrono::seconds(1'700'000'000) + ns};
}

inline std::uint64_t bytes(double units, double unit) {
  return static_cast<std::uint64_t>(units * unit);
}

// Floors without a split (the whole RSS is the signal), round r at r x 60 s.
inline std::vector<FloorPoint> floors(const std::vector<double>& values, double unit) {
  std::vector<FloorPoint> out;
  for (std::size_t i = 0; i < values.size(); ++i) {
    FloorPoint p;
    p.round = static_cast<std::uint32_t>(i + 1);
    p.rss_bytes = p.growth_bytes = bytes(values[i], unit);
    p.at = at_seconds(60.0 * static_cast<double>(i + 1));
    out.push_back(p);
  }
  return out;
}

// Assesses every prefix, as the daemon does at each settled boundary.
struct Replay {
  std::vector<GrowthAssessment> states;       // assessment after round i+1
  std::vector<std::vector<Verdict>> emitted;  // new verdicts at round i+1
};

inline Replay replay(const std::vector<FloorPoint>& f, const GrowthContext& ctx,
                     const DetectorParams& p) {
  Replay r;
  GrowthAssessment prev;
  for (std::size_t n = 1; n <= f.size(); ++n) {
    GrowthAssessment cur = assess_growth(std::span(f.data(), n), ctx, p);
    r.emitted.push_back(new_growth_verdicts(prev, cur));
    r.states.push_back(cur);
    prev = cur;
  }
  return r;
}

}  // namespace ramguard::test
