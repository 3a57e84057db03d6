#pragma once
// Sizes and durations as operators write them ("16GB", "16GiB", "500ms"), and human output.
// One rule for the daemon, libramguard, the CLI and the report renderers (the Python client
// follows the same rule; tests/data/units_cases.tsv holds the cases all of them are held to).
//
// Sizes: plain bytes ("123") or a number with a unit: kB MB GB TB are powers of 1000 (16GB =
// 16e9 bytes), KiB MiB GiB TiB powers of 1024; Kubernetes' k M G T and Ki Mi Gi Ti are the same
// units. Case-sensitive. A number is digits with an optional fraction ("2.5GB"); plain bytes are
// whole. Spaces or tabs may surround the number and the unit. At most kMaxSizeBytes.
// Durations: a number with ms, s, m or h ("500ms", "1.5m"); a bare number is refused because a
// duration without a unit is ambiguous. Kept to the nanosecond, at most kMaxDurationSeconds.
// Anything else is an error whose message names the text as given.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

#include "ramguard/base/result.hpp"

namespace ramguard {

// Sizes travel as int64 through SQLite and the daemon's arithmetic: a larger one is refused
// here rather than wrapped later.
inline constexpr std::uint64_t kMaxSizeBytes = 9'223'372'036'854'775'807ULL;  // INT64_MAX
// About 31 years: far beyond any window, and safely inside int64 nanoseconds.
inline constexpr double kMaxDurationSeconds = 1e9;

Result<std::uint64_t> parse_size_bytes(std::string_view text);
Result<std::chrono::nanoseconds> parse_duration(std::string_view text);

// Always with the unit. Decimal by default: "14.10 GB" from a tenth of a GB up, "70.1 MB"
// from a tenth of a MB up, else "512 B". binary: the same with GiB and MiB.
std::string format_bytes(double bytes, bool binary = false);
// Two sizes a sentence compares ("RSS A exceeds the B budget"), in the unit format_bytes picks
// for the larger, with as many decimals (up to 6) as it takes for different values to read
// differently: 305,000,000 against 300,000,000 bytes is "0.305 GB" and "0.300 GB", not
// "0.30 GB" twice.
std::pair<std::string, std::string> format_bytes_apart(double a, double b, bool binary = false);
// "300 ms" below 1 s, "6.75 s" below 10 min, "12.5 min" below 10 h, else "11.0 h".
std::string format_seconds(double seconds);

inline double to_seconds(std::chrono::nanoseconds d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace ramguard
