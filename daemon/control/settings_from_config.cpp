#include "control/settings_from_config.hpp"

namespace ramguard::control {

ServerLimits server_limits(const Config& c) {
  ServerLimits l;
  l.max_frame_bytes = c.control.max_frame_bytes;
  l.max_connections = c.control.max_connections;
  l.max_requests_per_second = static_cast<double>(c.control.max_requests_per_second);
  l.max_unread_output_bytes = c.control.max_unread_output_bytes;
  l.unread_output_timeout = c.control.unread_output_timeout;
  l.idle_timeout = c.control.idle_timeout;
  l.max_connections_per_uid = c.control.max_connections_per_uid;
  l.reserved_connections = c.control.reserved_connections;
  l.socket_check_interval = c.control.socket_check_interval;
  return l;
}

}  // namespace ramguard::control
