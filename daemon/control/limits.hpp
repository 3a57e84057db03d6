#pragma once
// Limits that keep a broken or hostile client from exhausting the guard.

#include <cstddef>
#include <cstdint>

#include "common/protocol.hpp"

namespace ramguard::control {

struct ServerLimits {
  std::size_t max_frame_bytes = protocol::kMaxRequestBytes;
  std::size_t max_connections = 64;
  double max_requests_per_second = 1000;  // per connection, token bucket
};

}  // namespace ramguard::control
