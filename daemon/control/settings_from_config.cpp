#include "control/settings_from_config.hpp"

namespace ramguard::control {

ServerLimits server_limits(const Config& c) {
  return {c.control.max_frame_bytes, c.control.max_connections,
          static_cast<double>(c.control.max_requests_per_second)};
}

DispatchSettings dispatch_settings(const Config& c) {
  return {c.plans, c.admission.use_calibrated, c.admission.calibration_factor};
}

}  // namespace ramguard::control
