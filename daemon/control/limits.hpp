#pragma once
// Limits that keep a broken or hostile client from exhausting the guard.

#include <cstddef>
#include <cstdint>

namespace ramguard::control {

struct ServerLimits {
  std::size_t max_frame_bytes = 64 * 1024;
  std::size_t max_connections = 64;
  double max_requests_per_second = 1000;  // per connection, token bucket
};

}  // namespace ramguard::control
