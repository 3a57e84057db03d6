#pragma once
// Sizes and durations as people type them ("16GB", "16GiB", "500ms"), and human output, for
// C++ coordinators and the CLI. A thin layer over the base the daemon uses for its configuration
// (ramguard/base/units.hpp, installed with libramguard), so a size means the same thing on the
// command line, in ramguard.yaml and in the daemon's replies.

#include <charconv>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "ramguard/base/units.hpp"

namespace ramguard::units {

// A parsed value, or an error message that names the text and what is allowed.
template <typename T>
struct Parsed {
  std::optional<T> value;
  std::string error;
  explicit operator bool() const { return value.has_value(); }
};

template <typename T>
Parsed<T> from_result(Result<T> r) {
  if (!r.ok()) return {std::nullopt, r.error().message};
  return {std::move(r).value(), {}};
}

// Plain bytes ("123") or a number with one of kB MB GB TB KiB MiB GiB TiB, or the Kubernetes
// forms k M G T Ki Mi Gi Ti of the same units (case-sensitive), fractions allowed with a unit
// ("2.5GB"), spaces allowed around the number and unit.
inline Parsed<std::uint64_t> parse_size(std::string_view text) {
  return from_result(parse_size_bytes(text));
}

// A number with one of ms s m h ("500ms", "2s", "1.5m"), to the nanosecond. A bare number is
// an error.
inline Parsed<std::chrono::nanoseconds> parse_duration(std::string_view text) {
  return from_result(ramguard::parse_duration(text));
}

// A non-negative integer no larger than max ("3"); no sign, no unit, no spaces.
inline Parsed<std::uint64_t> parse_count(std::string_view text, std::uint64_t max) {
  std::uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value > max) {
    return {std::nullopt, "invalid number '" + std::string(text) +
                              "': expected a whole number from 0 to " + std::to_string(max)};
  }
  return {value, {}};
}

// "14.10 GB", "70.1 MB", "512 B" (decimal, the default) or "13.13 GiB" (binary).
inline std::string format_bytes(double bytes, bool binary = false) {
  return ramguard::format_bytes(bytes, binary);
}
// "300 ms", "6.75 s", "12.5 min".
inline std::string format_seconds(double seconds) {
  return ramguard::format_seconds(seconds);
}

}  // namespace ramguard::units
