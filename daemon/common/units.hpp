#pragma once
// Sizes and durations as operators write them ("16GB", "16GiB", "500ms"), and human output.
// Decimal units are powers of 1000 (16GB = 16e9 bytes), binary units powers of 1024.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace ramguard {

// Accepts plain bytes ("123") or a number with one of: kB MB GB TB KiB MiB GiB TiB.
// Fractions are allowed with a unit ("2.5GB"). Anything else is an error naming the text.
Result<std::uint64_t> parse_size_bytes(std::string_view text);

// Accepts a number with one of: ms s m h ("2s", "500ms", "1.5m"). A bare number is an error:
// a duration without a unit is ambiguous.
Result<std::chrono::nanoseconds> parse_duration(std::string_view text);

// "14.10 GB" (decimal) or "13.13 GiB" (binary); always prints the unit.
std::string format_bytes(double bytes, bool binary = false);
// "6.75 s", "300 ms".
std::string format_seconds(double seconds);

inline double to_seconds(std::chrono::nanoseconds d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace ramguard
