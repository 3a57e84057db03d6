#pragma once
// The control server's limits and the dispatcher's settings a configuration asks for.

#include "config/config.hpp"
#include "control/dispatcher.hpp"
#include "control/limits.hpp"

namespace ramguard::control {

ServerLimits server_limits(const Config& config);
DispatchSettings dispatch_settings(const Config& config);

}  // namespace ramguard::control
