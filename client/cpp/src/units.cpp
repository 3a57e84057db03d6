#include "ramguard/units.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace ramguard::units {
namespace {

struct Unit {
  std::string_view suffix;
  double factor;
};

// The daemon's configuration accepts exactly these (daemon/common/units.cpp), so a size means the
// same thing on the command line and in ramguard.yaml.
constexpr std::array<Unit, 9> kSizeUnits{{
    {"kB", 1e3},
    {"MB", 1e6},
    {"GB", 1e9},
    {"TB", 1e12},
    {"KiB", 1024.0},
    {"MiB", 1048576.0},
    {"GiB", 1073741824.0},
    {"TiB", 1099511627776.0},
    {"", 1.0},
}};

constexpr std::array<Unit, 4> kDurationUnits{{
    {"ms", 1.0},
    {"s", 1e3},
    {"m", 60e3},
    {"h", 3600e3},
}};

std::string quoted(std::string_view text) {
  return "'" + std::string(text) + "'";
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Splits " 2.5 GB " into the number and the unit; the number is digits with at most one point.
bool split_number(std::string_view text, std::string_view& number, std::string_view& unit) {
  text = trim(text);
  std::size_t i = 0;
  bool digits = false;
  bool point = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c >= '0' && c <= '9') {
      digits = true;
    } else if (c == '.' && !point) {
      point = true;
    } else {
      break;
    }
  }
  number = text.substr(0, i);
  unit = trim(text.substr(i));
  return digits;
}

bool to_double(std::string_view number, double& out) {
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), out);
  return ec == std::errc() && end == number.data() + number.size() && std::isfinite(out);
}

}  // namespace

Parsed<std::uint64_t> parse_size(std::string_view text) {
  constexpr const char* kAllowed =
      "a size is plain bytes or a number with kB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, "
      "TiB (powers of 1024), e.g. 16GB or 16GiB";
  std::string_view number;
  std::string_view unit;
  if (!split_number(text, number, unit)) {
    return {std::nullopt, "invalid size " + quoted(text) + ": " + kAllowed};
  }
  for (const Unit& u : kSizeUnits) {
    if (unit != u.suffix) continue;
    if (u.suffix.empty() && number.find('.') != std::string_view::npos) {
      return {std::nullopt,
              "invalid size " + quoted(text) + ": plain bytes must be a whole number"};
    }
    double value = 0;
    if (!to_double(number, value)) break;
    const double bytes = std::round(value * u.factor);
    if (bytes >= 18446744073709551615.0) {
      return {std::nullopt, "invalid size " + quoted(text) + ": too large"};
    }
    return {static_cast<std::uint64_t>(bytes), {}};
  }
  return {std::nullopt, "invalid size " + quoted(text) + ": " + kAllowed};
}

Parsed<std::chrono::milliseconds> parse_duration(std::string_view text) {
  constexpr const char* kAllowed = "a duration is a number with ms, s, m or h, e.g. 5s or 500ms";
  std::string_view number;
  std::string_view unit;
  if (!split_number(text, number, unit)) {
    return {std::nullopt, "invalid duration " + quoted(text) + ": " + kAllowed};
  }
  for (const Unit& u : kDurationUnits) {
    if (unit != u.suffix) continue;
    double value = 0;
    if (!to_double(number, value)) break;
    const double ms = std::round(value * u.factor);
    if (ms > 1e15) return {std::nullopt, "invalid duration " + quoted(text) + ": too long"};
    return {std::chrono::milliseconds(static_cast<std::int64_t>(ms)), {}};
  }
  return {std::nullopt, "invalid duration " + quoted(text) + ": " + kAllowed};
}

Parsed<std::uint64_t> parse_count(std::string_view text, std::uint64_t max) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value > max) {
    return {std::nullopt, "invalid number " + quoted(text) +
                              ": expected a whole number from 0 to " + std::to_string(max)};
  }
  return {value, {}};
}

std::string format_bytes(double bytes, bool binary) {
  const double unit = binary ? 1073741824.0 : 1e9;
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.2f %s", bytes / unit, binary ? "GiB" : "GB");
  return buffer;
}

std::string format_seconds(double seconds) {
  char buffer[64];
  if (seconds < 1.0 && seconds > -1.0) {
    std::snprintf(buffer, sizeof buffer, "%.0f ms", seconds * 1e3);
  } else {
    std::snprintf(buffer, sizeof buffer, "%.2f s", seconds);
  }
  return buffer;
}

}  // namespace ramguard::units
