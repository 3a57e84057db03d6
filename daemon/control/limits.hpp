#pragma once
// Limits that keep a broken or hostile client from exhausting the guard.

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "ramguard/base/protocol.hpp"

namespace ramguard::control {

using namespace std::chrono_literals;

struct ServerLimits {
  std::size_t max_frame_bytes = protocol::kMaxRequestBytes;
  std::size_t max_connections = 64;
  double max_requests_per_second = 1000;  // per connection, token bucket
  // Replies the client has not read yet, held by the daemon: above this no further request of
  // that connection is read (one reply may pass it; the next request waits).
  std::size_t max_unread_output_bytes = 1024 * 1024;
  // A connection above max_unread_output_bytes whose client reads nothing for this long is closed.
  std::chrono::nanoseconds unread_output_timeout = 30s;
  // A connection that sends no complete request and reads nothing for this long is closed.
  std::chrono::nanoseconds idle_timeout = 10min;
  // Connections one unprivileged UID may hold; root and the daemon's own UID are not capped.
  std::size_t max_connections_per_uid = 16;
  // Of max_connections, this many are only for root and the daemon's own UID (other UIDs
  // together get at most max_connections minus this, and at least one).
  std::size_t reserved_connections = 8;
  // How often the socket path is checked for having been removed or replaced.
  std::chrono::nanoseconds socket_check_interval = 2s;
};

}  // namespace ramguard::control
