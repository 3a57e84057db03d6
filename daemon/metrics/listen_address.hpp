#pragma once
// The metrics listen address as operators write it ("127.0.0.1:9464", "[::1]:0", ":9464"),
// validated before it reaches civetweb, whose own errors do not say what was wrong.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/result.hpp"

namespace ramguard {

struct ListenAddress {
  std::string host;        // numeric IPv4 or IPv6 (without brackets)
  std::uint16_t port = 0;  // 0: the kernel picks one
  bool ipv6 = false;
  // As civetweb's listening_ports wants it: "127.0.0.1:9464" or "[::1]:9464".
  std::string civetweb_spec() const;
};

// "HOST:PORT" with a numeric IPv4 host, "[IPv6]:PORT", or "localhost:PORT" (= 127.0.0.1).
// An empty host (":9464") means 127.0.0.1: metrics stay on loopback unless told otherwise.
Result<ListenAddress> parse_listen_address(std::string_view text);

// Why the address cannot be listened on, found by binding a probe socket: "Address already in
// use", "Cannot assign requested address", ... Empty when the probe binds fine.
std::string probe_listen_error(const ListenAddress& address);

}  // namespace ramguard
