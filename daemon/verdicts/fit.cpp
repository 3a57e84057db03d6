#include "verdicts/fit.hpp"

#include <algorithm>

namespace ramguard {

LineFit fit_line(std::span<const double> x, std::span<const double> y) {
  LineFit fit;
  fit.n = std::min(x.size(), y.size());
  if (fit.n == 0) return fit;
  double mean_x = 0, mean_y = 0;
  for (std::size_t i = 0; i < fit.n; ++i) {
    mean_x += x[i];
    mean_y += y[i];
  }
  mean_x /= static_cast<double>(fit.n);
  mean_y /= static_cast<double>(fit.n);
  double sxx = 0, sxy = 0, syy = 0;
  for (std::size_t i = 0; i < fit.n; ++i) {
    const double dx = x[i] - mean_x, dy = y[i] - mean_y;
    sxx += dx * dx;
    sxy += dx * dy;
    syy += dy * dy;
  }
  fit.intercept = mean_y;
  if (sxx <= 0) return fit;  // one distinct x: no slope to speak of
  fit.slope = sxy / sxx;
  fit.intercept = mean_y - fit.slope * mean_x;
  // Centred values keep this exact enough for byte counts of tens of GB.
  fit.r2 = syy > 0 ? std::clamp((sxy * sxy) / (sxx * syy), 0.0, 1.0) : 0.0;
  return fit;
}

}  // namespace ramguard
