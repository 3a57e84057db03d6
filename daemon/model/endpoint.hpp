#pragma once
// A TCP listener's address, parsed once where it enters (config/values.hpp parse_endpoint) and
// handed as this type to whoever listens (the metrics exporter, the control server): the host
// is numeric (IPv4, or IPv6 without brackets), "localhost" having become 127.0.0.1.

#include <cstdint>
#include <string>

namespace ramguard {

struct Endpoint {
  std::string host = "127.0.0.1";
  std::uint16_t port = 0;  // 0: the kernel picks a free port (logged at startup)

  bool ipv6() const { return host.find(':') != std::string::npos; }
  // "127.0.0.1:9797", "[::1]:9797": the form parse_endpoint reads, and civetweb's.
  std::string to_string() const {
    return (ipv6() ? "[" + host + "]" : host) + ":" + std::to_string(port);
  }
  friend bool operator==(const Endpoint&, const Endpoint&) = default;
};

}  // namespace ramguard
