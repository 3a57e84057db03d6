#pragma once
// The one fuzz entry point for the YAML configuration loader (parse_config_yaml), shared by
// the libFuzzer target (config_fuzz) and the config_fuzz_smoke gtest. Returns false when an
// invariant is broken: a rejected text gets a message that starts with the source name (so a
// person knows which file is wrong); an accepted one passes validate_config again unchanged.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "config/load.hpp"

namespace ramguard::fuzz {

inline constexpr std::string_view kConfigSource = "fuzz.yaml";

inline bool config_parse_one(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = parse_config_yaml(text, kConfigSource);
  if (!config.ok()) {
    const std::string& message = config.error().message;
    return message.size() > kConfigSource.size() && message.starts_with(kConfigSource);
  }
  return config->budget_bytes > 0 && validate_config(*config, kConfigSource).ok();
}

}  // namespace ramguard::fuzz
