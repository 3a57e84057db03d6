#pragma once
// The run parameters a configuration asks for: the one place config keys become detector and
// registry settings.

#include <string_view>

#include "config/config.hpp"
#include "config/load.hpp"
#include "ramguard/base/result.hpp"
#include "runs/run_params.hpp"

namespace ramguard {

RunParams run_params(const Config& config);

// The one check of a configuration the daemon is about to use, at --check-config, at startup
// and at SIGHUP: the schema's ranges and cross-key rules (validate_config), then what the
// detectors can work with (validate_params), so nothing accepted is silently unusable.
Status validate_for_daemon(const Config& config, std::string_view source_name);

}  // namespace ramguard
