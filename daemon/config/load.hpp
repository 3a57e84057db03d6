#pragma once
// Loading the YAML configuration: every key validated, every error collected. Messages are
// "<source>:<line>: <key path>: <problem with the value and what is allowed>", one per line.
// Keys left out keep the embedded defaults (config.hpp); `plans:` and `phase_gaps:`, when
// present, replace the default plans and gaps as a whole.

#include <filesystem>
#include <string>
#include <string_view>

#include "config/config.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

// The embedded defaults: what `ramguardd` runs on without a file.
Config default_config();

// Parses YAML text; `source_name` (usually the file name) starts every message. Malformed YAML
// is reported with its line and column. Never throws.
Result<Config> parse_config_yaml(std::string_view text, std::string_view source_name);

// Reads and parses a file. A missing file, a directory, an unreadable or oversized file is an
// error naming the path and the reason.
Result<Config> load_config_file(const std::filesystem::path& path);
// The file's text, with the same checks and errors.
Result<std::string> read_config_file(const std::filesystem::path& path);

// Checks between keys (margin below budget, windows at least one interval, a TCP listener
// with a token file, ...) and the ranges flags can also set. parse_config_yaml runs it;
// call it again after apply_overrides, since flags can break a cross-key rule.
Status validate_config(const Config& config, std::string_view source_name = "configuration");

}  // namespace ramguard
