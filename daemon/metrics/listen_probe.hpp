#pragma once
// Why an address cannot be listened on: civetweb only says that it could not start.

#include <string>

#include "model/endpoint.hpp"

namespace ramguard {

// Found by binding a probe socket: "Address already in use", "Cannot assign requested
// address", ... Empty when the probe binds fine.
std::string probe_listen_error(const Endpoint& address);

}  // namespace ramguard
