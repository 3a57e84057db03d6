#pragma once
// Axis arithmetic for the SVG chart: linear maps, "nice" tick steps (1, 2, 2.5, 5 x 10^k) with
// labels that show every digit the step needs (2.5 s, 5 s, 7.5 s), and the time axis whose
// release window (after the run's end) is compressed when it would dwarf the run.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
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
  if (!(span > 0) || !std::isfinite(span) || target < 1) return 1;
  const double raw = span / target;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0}) {
    if (m * magnitude >= raw * (1 - 1e-9)) return m * magnitude;
  }
  return 10 * magnitude;
}

// Ticks from 0 (or the first multiple of step above min) up to max inclusive.
inline std::vector<double> ticks(double min, double max, double step) {
  std::vector<double> out;
  if (!(step > 0)) return out;
  const double first = std::ceil(min / step - 1e-9);
  for (int i = 0; out.size() < 64; ++i) {
    const double v = (first + i) * step;  // multiplied, not summed: no drift over many ticks
    if (v > max + step * 1e-9) break;
    out.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
  }
  return out;
}

// The decimals a step needs: 2.5 -> 1, 0.25 -> 2, 5 -> 0.
inline int step_decimals(double step) {
  for (int d = 0; d < 4; ++d) {
    const double scaled = step * std::pow(10.0, d);
    if (std::abs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) return d;
  }
  return 4;
}

// A tick value with the step's decimals, trailing zeros dropped: 5 (not 5.0), 7.5, 0.25.
inline std::string tick_text(double value, double step) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", step_decimals(step), value);
  std::string text = buf;
  if (text.find('.') != std::string::npos) {
    while (text.back() == '0') text.pop_back();
    if (text.back() == '.') text.pop_back();
  }
  return text == "-0" ? "0" : text;
}

// Seconds since the run's start to x. The run (0 .. run_end_s) is linear over most of the width;
// the release window after it (run_end_s .. total_s) gets at most `release_share` of the width
// when it is longer than that share of the time, so a 30 s release grace does not squeeze a
// 2 s run into a corner.
struct TimeAxis {
  double run_end_s = 0, total_s = 1;
  double left = 0, right = 1;
  double split = 1;  // x of run_end_s
  bool compressed = false;

  static TimeAxis make(double run_end_s, double total_s, double left, double right,
                       double release_share = 0.16) {
    TimeAxis a;
    a.total_s = total_s > 0 ? total_s : 1;
    a.run_end_s = std::clamp(run_end_s, 0.0, a.total_s);
    a.left = left;
    a.right = right;
    const double release_s = a.total_s - a.run_end_s;
    a.compressed = a.run_end_s > 0 && release_s > release_share * a.total_s;
    a.split = a.compressed ? right - release_share * (right - left)
                           : left + (right - left) * a.run_end_s / a.total_s;
    return a;
  }
  double operator()(double s) const {
    if (!compressed) return left + (right - left) * std::clamp(s, 0.0, total_s) / total_s;
    if (s <= run_end_s) return left + (split - left) * std::max(s, 0.0) / run_end_s;
    return split + (right - split) * (std::min(s, total_s) - run_end_s) / (total_s - run_end_s);
  }
};

}  // namespace ramguard::report
