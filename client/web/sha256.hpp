#pragma once
// SHA-256 (FIPS 180-4) for the export's Content-Security-Policy hashes: the project's
// dependencies have no hash function of their own to lend.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace ramguard::web {

std::array<std::uint8_t, 32> sha256(std::string_view data);
// The digest in base64 (RFC 4648, padded), as CSP's 'sha256-...' source expects.
std::string sha256_base64(std::string_view data);
std::string base64(const std::uint8_t* data, std::size_t size);

}  // namespace ramguard::web
