#pragma once
// The control server's limits a configuration asks for.

#include "config/config.hpp"
#include "control/limits.hpp"

namespace ramguard::control {

ServerLimits server_limits(const Config& config);

}  // namespace ramguard::control
