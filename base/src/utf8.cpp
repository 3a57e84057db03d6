#include "ramguard/base/utf8.hpp"

#include <cstdint>
#include <cstdio>

namespace ramguard {
namespace {

// The length of the well-formed sequence starting at text[i], 0 when there is none.
std::size_t sequence_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<std::uint8_t>(text[i + k]); };
  const std::uint8_t b0 = byte(0);
  if (b0 < 0x80) return 1;
  std::size_t n = 0;
  std::uint8_t low = 0x80, high = 0xBF;  // the allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    n = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    n = 3;
    if (b0 == 0xE0) low = 0xA0;   // overlong
    if (b0 == 0xED) high = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    n = 4;
    if (b0 == 0xF0) low = 0x90;   // overlong
    if (b0 == 0xF4) high = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (std::size_t k = 2; k < n; ++k) {
    if (byte(k) < 0x80 || byte(k) > 0xBF) return 0;
  }
  return n;
}

}  // namespace

std::string valid_utf8(std::string_view text, std::string_view replacement) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (const std::size_t n = sequence_length(text, i); n > 0) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    const auto b = static_cast<std::uint8_t>(text[i++]);
    if (!replacement.empty()) {
      out += replacement;
      continue;
    }
    out += "\\x";
    out += kHex[b >> 4];
    out += kHex[b & 0xF];
  }
  return out;
}

std::size_t control_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[i + k]); };
  const unsigned char c = byte(0);
  if (c < 0x20 || c == 0x7F) return 1;
  if (c == 0xC2 && i + 1 < text.size() && byte(1) >= 0x80 && byte(1) <= 0x9F) return 2;
  if (c == 0xD8 && i + 1 < text.size() && byte(1) == 0x9C) return 2;  // U+061C
  if (c == 0xE2 && i + 2 < text.size()) {
    const unsigned char b1 = byte(1), b2 = byte(2);
    if (b1 == 0x80 && (b2 == 0x8E || b2 == 0x8F)) return 3;  // U+200E, U+200F
    if (b1 == 0x80 && b2 >= 0xA8 && b2 <= 0xAE) return 3;    // U+2028-U+202E
    if (b1 == 0x81 && b2 >= 0xA6 && b2 <= 0xA9) return 3;    // U+2066-U+2069
  }
  return 0;
}

std::uint32_t control_code_point(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) -> std::uint32_t {
    return static_cast<unsigned char>(text[i + k]);
  };
  switch (control_length(text, i)) {
    case 2:
      return ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
    case 3:
      return ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
    default:
      return byte(0);
  }
}

std::string visible_control(std::string_view text, std::size_t i) {
  char buf[16];
  if (control_length(text, i) >= 2) {
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(control_code_point(text, i)));
  } else {
    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(text[i]));
  }
  return buf;
}

}  // namespace ramguard
