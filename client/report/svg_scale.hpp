#pragma once
// Axis arithmetic for the SVG chart: linear maps and "nice" tick steps (1, 2, 2.5, 5 x 10^k).

#include <cmath>
#include <vector>

namespace ramguard::report {

struct LinearScale {
  double domain_min = 0, domain_max = 1;
  double range_min = 0, range_max = 1;
  double operator()(double v) const {
    const double span = domain_max - domain_min;
    const double t = span > 0 ? (v - domain_min) / span : 0;
    return range_min + t * (range_max - range_min);
  }
};

// A step that divides `span` into roughly `target` intervals.
inline double nice_step(double span, int target) {
  if (!(span > 0) || !std::isfinite(span)) return 1;
  const double raw = span / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * magnitude >= raw) return m * magnitude;
  }
  return 10 * magnitude;
}

// Ticks from 0 (or the first multiple of step above min) up to max inclusive.
inline std::vector<double> ticks(double min, double max, double step) {
  std::vector<double> out;
  if (!(step > 0)) return out;
  for (double v = std::ceil(min / step) * step; v <= max + step * 1e-9 && out.size() < 64;
       v += step) {
    out.push_back(v);
  }
  return out;
}

}  // namespace ramguard::report
