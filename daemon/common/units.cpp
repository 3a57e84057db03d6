#include "common/units.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>

namespace ramguard {
namespace {

struct Unit {
  std::string_view suffix;
  double factor;
};

// Longest suffixes first so "GiB" is not read as "B" with a stray "Gi".
constexpr std::array<Unit, 8> kSizeUnits{{{"KiB", 1024.0},
                                          {"MiB", 1024.0 * 1024},
                                          {"GiB", 1024.0 * 1024 * 1024},
                                          {"TiB", 1024.0 * 1024 * 1024 * 1024},
                                          {"kB", 1e3},
                                          {"MB", 1e6},
                                          {"GB", 1e9},
                                          {"TB", 1e12}}};

constexpr std::array<Unit, 4> kDurationUnits{
    {{"ms", 1e-3}, {"s", 1.0}, {"m", 60.0}, {"h", 3600.0}}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Parses a non-negative decimal number that spans the whole of `digits`.
bool parse_number(std::string_view digits, double& out) {
  if (digits.empty() || digits.front() == '-' || digits.front() == '+') return false;
  auto [ptr, ec] =
      std::from_chars(digits.data(), digits.data() + digits.size(), out, std::chars_format::fixed);
  return ec == std::errc() && ptr == digits.data() + digits.size() && std::isfinite(out);
}

}  // namespace

Result<std::uint64_t> parse_size_bytes(std::string_view raw) {
  const std::string_view text = trim(raw);
  const std::string allowed = "plain bytes or a number with kB, MB, GB, TB, KiB, MiB, GiB, TiB";
  if (text.empty()) return Error{"empty size; expected " + allowed};
  std::uint64_t plain = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), plain);
  if (ec == std::errc() && ptr == text.data() + text.size()) return plain;
  for (const Unit& unit : kSizeUnits) {
    if (text.size() <= unit.suffix.size() || !text.ends_with(unit.suffix)) continue;
    double number = 0;
    if (!parse_number(trim(text.substr(0, text.size() - unit.suffix.size())), number)) break;
    const double bytes = std::round(number * unit.factor);
    if (bytes > static_cast<double>(std::numeric_limits<std::int64_t>::max())) {
      return Error{"size '" + std::string(text) + "' is too large"};
    }
    return static_cast<std::uint64_t>(bytes);
  }
  return Error{"invalid size '" + std::string(text) + "'; expected " + allowed};
}

Result<std::chrono::nanoseconds> parse_duration(std::string_view raw) {
  const std::string_view text = trim(raw);
  const std::string allowed = "a number with ms, s, m or h (for example 2s or 500ms)";
  for (const Unit& unit : kDurationUnits) {
    if (text.size() <= unit.suffix.size() || !text.ends_with(unit.suffix)) continue;
    std::string_view digits = trim(text.substr(0, text.size() - unit.suffix.size()));
    // "ms" also ends with "s": only accept when the rest is a number.
    double number = 0;
    if (!parse_number(digits, number)) continue;
    const double seconds = number * unit.factor;
    if (seconds > 1e9) return Error{"duration '" + std::string(text) + "' is too large"};
    return std::chrono::nanoseconds(static_cast<std::int64_t>(std::llround(seconds * 1e9)));
  }
  return Error{"invalid duration '" + std::string(text) + "'; expected " + allowed};
}

std::string format_bytes(double bytes, bool binary) {
  const double gb = binary ? 1024.0 * 1024 * 1024 : 1e9;
  const double mb = binary ? 1024.0 * 1024 : 1e6;
  char buf[64];
  const double magnitude = std::fabs(bytes);
  if (magnitude >= gb / 10) {
    std::snprintf(buf, sizeof buf, "%.2f %s", bytes / gb, binary ? "GiB" : "GB");
  } else if (magnitude >= mb / 10) {
    std::snprintf(buf, sizeof buf, "%.1f %s", bytes / mb, binary ? "MiB" : "MB");
  } else {
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  }
  return buf;
}

std::string format_seconds(double seconds) {
  char buf[64];
  if (std::fabs(seconds) < 1.0) {
    std::snprintf(buf, sizeof buf, "%.0f ms", seconds * 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%.2f s", seconds);
  }
  return buf;
}

}  // namespace ramguard
