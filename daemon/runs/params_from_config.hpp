#pragma once
// The run parameters a configuration asks for: the one place config keys become detector and
// registry settings.

#include "config/config.hpp"
#include "runs/run_params.hpp"

namespace ramguard {

RunParams run_params(const Config& config);

}  // namespace ramguard
