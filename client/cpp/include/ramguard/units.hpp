#pragma once
// Sizes and durations as people type them on a command line ("16GB", "16GiB", "500ms"), and
// human output. The client's own copy of the rule the daemon applies to its configuration:
// decimal units are powers of 1000 (16GB = 16e9 bytes), binary units powers of 1024; anything
// else is an error naming the text. Clients include nothing from daemon/.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ramguard::units {

// A parsed value, or an error message that names the text and what is allowed.
template <typename T>
struct Parsed {
  std::optional<T> value;
  std::string error;
  explicit operator bool() const { return value.has_value(); }
};

// Plain bytes ("123") or a number with one of kB MB GB TB KiB MiB GiB TiB (case-sensitive),
// fractions allowed with a unit ("2.5GB"), spaces allowed around the number and unit.
Parsed<std::uint64_t> parse_size(std::string_view text);

// A number with one of ms s m h ("500ms", "2s", "1.5m"). A bare number is an error.
Parsed<std::chrono::milliseconds> parse_duration(std::string_view text);

// A non-negative integer that fits the type ("3"); no sign, no unit.
Parsed<std::uint64_t> parse_count(std::string_view text, std::uint64_t max);

// "14.10 GB" (decimal, the default) or "13.13 GiB" (binary); always prints the unit.
std::string format_bytes(double bytes, bool binary = false);
// "6.75 s" or "300 ms".
std::string format_seconds(double seconds);

}  // namespace ramguard::units
