#pragma once
// Least-squares line through (x, y) points: the slope detectors judge, and how well it fits.

#include <cstddef>
#include <span>

namespace ramguard {

struct LineFit {
  double slope = 0;
  double intercept = 0;
  double r2 = 0;  // 0 when y is constant or there are fewer than 2 distinct x values
  std::size_t n = 0;
  double at(double x) const { return intercept + slope * x; }
};

// x and y must have the same length; extra elements of the longer one are ignored.
LineFit fit_line(std::span<const double> x, std::span<const double> y);

}  // namespace ramguard
