#include "ramguard/base/units.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace ramguard {
namespace {

struct Unit {
  std::string_view suffix;
  double factor;
};

constexpr std::array<Unit, 16> kSizeUnits{{{"kB", 1e3},
                                           {"MB", 1e6},
                                           {"GB", 1e9},
                                           {"TB", 1e12},
                                           {"KiB", 1024.0},
                                           {"MiB", 1048576.0},
                                           {"GiB", 1073741824.0},
                                           {"TiB", 1099511627776.0},
                                           // Kubernetes quantity suffixes, so a pod spec's
                                           // "16Gi" or "16G" can be pasted as it is.
                                           {"k", 1e3},
                                           {"M", 1e6},
                                           {"G", 1e9},
                                           {"T", 1e12},
                                           {"Ki", 1024.0},
                                           {"Mi", 1048576.0},
                                           {"Gi", 1073741824.0},
                                           {"Ti", 1099511627776.0}}};
constexpr const char* kSizeAllowed =
    "expected plain bytes or a number with kB, MB, GB, TB, KiB, MiB, GiB, TiB (or the Kubernetes "
    "forms k, M, G, T, Ki, Mi, Gi, Ti)";

// Nanoseconds per unit: one multiplication from the number to the result, so every language
// that follows this rule gets the same nanoseconds.
constexpr std::array<Unit, 4> kDurationUnits{{{"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9}}};
constexpr const char* kDurationAllowed =
    "expected a number with ms, s, m or h (for example 2s or 500ms)";

bool is_blank(char c) {
  return c == ' ' || c == '\t';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && is_blank(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_blank(s.back())) s.remove_suffix(1);
  return s;
}

// " 2.5 GB " -> number "2.5", unit "GB". The number is digits with an optional point followed by
// digits: no sign, no exponent, no hex. False when the text does not start with such a number.
struct Split {
  std::string_view number;
  std::string_view unit;
  bool fraction = false;
};

bool split(std::string_view text, Split& out) {
  text = trim(text);
  std::size_t i = 0;
  while (i < text.size() && is_digit(text[i])) ++i;
  if (i == 0) return false;
  if (i < text.size() && text[i] == '.') {
    std::size_t j = i + 1;
    while (j < text.size() && is_digit(text[j])) ++j;
    if (j == i + 1) return false;
    i = j;
    out.fraction = true;
  }
  out.number = text.substr(0, i);
  out.unit = trim(text.substr(i));
  return true;
}

double to_double(std::string_view number) {
  double value = 0;
  std::from_chars(number.data(), number.data() + number.size(), value);
  return value;  // split() only lets through what from_chars reads whole
}

std::string quoted(std::string_view text) {
  return "'" + std::string(text) + "'";
}

}  // namespace

Result<std::uint64_t> parse_size_bytes(std::string_view text) {
  const std::string invalid = "invalid size " + quoted(text) + "; ";
  Split s;
  if (!split(text, s)) return Error{invalid + kSizeAllowed};
  const std::string too_large =
      invalid + "too large (at most " + std::to_string(kMaxSizeBytes) + " bytes)";
  if (s.unit.empty()) {
    if (s.fraction) return Error{invalid + "plain bytes are a whole number; fractions need a unit"};
    std::uint64_t bytes = 0;
    const auto [end, ec] =
        std::from_chars(s.number.data(), s.number.data() + s.number.size(), bytes);
    if (ec != std::errc() || end != s.number.data() + s.number.size() || bytes > kMaxSizeBytes) {
      return Error{too_large};
    }
    return bytes;
  }
  for (const Unit& unit : kSizeUnits) {
    if (s.unit != unit.suffix) continue;
    const double bytes = std::round(to_double(s.number) * unit.factor);
    // 2^63 is the first double past INT64_MAX.
    if (!(bytes < 9223372036854775808.0)) return Error{too_large};
    return static_cast<std::uint64_t>(bytes);
  }
  return Error{invalid + kSizeAllowed};
}

Result<std::chrono::nanoseconds> parse_duration(std::string_view text) {
  const std::string invalid = "invalid duration " + quoted(text) + "; ";
  Split s;
  if (!split(text, s)) return Error{invalid + kDurationAllowed};
  for (const Unit& unit : kDurationUnits) {
    if (s.unit != unit.suffix) continue;
    const double ns = std::round(to_double(s.number) * unit.factor);
    if (!(ns <= kMaxDurationSeconds * 1e9)) {
      return Error{invalid + "too long (at most " +
                   std::to_string(static_cast<std::int64_t>(kMaxDurationSeconds)) + " s)"};
    }
    return std::chrono::nanoseconds(static_cast<std::int64_t>(ns));
  }
  return Error{invalid + kDurationAllowed};
}

std::string format_bytes(double bytes, bool binary) {
  const double gb = binary ? 1073741824.0 : 1e9;
  const double mb = binary ? 1048576.0 : 1e6;
  char buf[64];
  const double magnitude = std::fabs(bytes);
  if (!std::isfinite(bytes)) {
    std::snprintf(buf, sizeof buf, "? B");
  } else if (magnitude >= gb / 10) {
    std::snprintf(buf, sizeof buf, "%.2f %s", bytes / gb, binary ? "GiB" : "GB");
  } else if (magnitude >= mb / 10) {
    std::snprintf(buf, sizeof buf, "%.1f %s", bytes / mb, binary ? "MiB" : "MB");
  } else {
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  }
  return buf;
}

std::pair<std::string, std::string> format_bytes_apart(double a, double b, bool binary) {
  std::pair<std::string, std::string> out{format_bytes(a, binary), format_bytes(b, binary)};
  if (out.first != out.second || a == b || !std::isfinite(a) || !std::isfinite(b)) return out;
  const double gb = binary ? 1073741824.0 : 1e9;
  const double mb = binary ? 1048576.0 : 1e6;
  const double magnitude = std::max(std::fabs(a), std::fabs(b));
  const bool in_gb = magnitude >= gb / 10;
  const double unit = in_gb ? gb : mb;
  const char* name = in_gb ? (binary ? "GiB" : "GB") : (binary ? "MiB" : "MB");
  for (int decimals = in_gb ? 3 : 2; decimals <= 6; ++decimals) {
    char x[64], y[64];
    std::snprintf(x, sizeof x, "%.*f %s", decimals, a / unit, name);
    std::snprintf(y, sizeof y, "%.*f %s", decimals, b / unit, name);
    out = {x, y};
    if (out.first != out.second) break;
  }
  return out;
}

std::string format_seconds(double seconds) {
  char buf[64];
  const double magnitude = std::fabs(seconds);
  if (!std::isfinite(seconds)) {
    std::snprintf(buf, sizeof buf, "? s");
  } else if (magnitude < 1.0) {
    std::snprintf(buf, sizeof buf, "%.0f ms", seconds * 1e3);
  } else if (magnitude < 600.0) {
    std::snprintf(buf, sizeof buf, "%.2f s", seconds);
  } else if (magnitude < 36000.0) {
    std::snprintf(buf, sizeof buf, "%.1f min", seconds / 60.0);
  } else {
    std::snprintf(buf, sizeof buf, "%.1f h", seconds / 3600.0);
  }
  return buf;
}

}  // namespace ramguard
