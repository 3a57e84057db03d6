#include "metrics/listen_address.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

namespace ramguard {

std::string ListenAddress::civetweb_spec() const {
  return (ipv6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<ListenAddress> parse_listen_address(std::string_view text) {
  const std::string quoted = "metrics address '" + std::string(text) + "'";
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    return Error{quoted + ": expected HOST:PORT, e.g. 127.0.0.1:9464 or [::1]:0"};
  }
  std::string_view host = text.substr(0, colon);
  const std::string_view port_text = text.substr(colon + 1);
  unsigned port = 0;
  auto [ptr, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc{} || ptr != port_text.data() + port_text.size() ||
      port > 65535) {
    return Error{quoted + ": port '" + std::string(port_text) +
                 "' is not a number from 0 to 65535 (0 picks a free port)"};
  }
  ListenAddress address;
  address.port = static_cast<std::uint16_t>(port);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    in6_addr probe{};
    if (::inet_pton(AF_INET6, std::string(host).c_str(), &probe) != 1) {
      return Error{quoted + ": '" + std::string(host) + "' is not a numeric IPv6 address"};
    }
    address.host = std::string(host);
    address.ipv6 = true;
    return address;
  }
  if (host.empty() || host == "localhost") host = "127.0.0.1";
  in_addr probe{};
  if (::inet_pton(AF_INET, std::string(host).c_str(), &probe) != 1) {
    return Error{quoted + ": host '" + std::string(host) +
                 "' is not a numeric IPv4 address, [IPv6] address or localhost"};
  }
  address.host = std::string(host);
  return address;
}

std::string probe_listen_error(const ListenAddress& address) {
  const int family = address.ipv6 ? AF_INET6 : AF_INET;
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::string("cannot create a socket: ") + std::strerror(errno);
  // Same option civetweb sets, so a port in TIME_WAIT is not reported as taken.
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc = 0;
  if (address.ipv6) {
    sockaddr_in6 sa{};
    sa.sin6_family = AF_INET6;
    sa.sin6_port = htons(address.port);
    ::inet_pton(AF_INET6, address.host.c_str(), &sa.sin6_addr);
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  } else {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(address.port);
    ::inet_pton(AF_INET, address.host.c_str(), &sa.sin_addr);
    rc = ::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa));
  }
  if (rc == 0) rc = ::listen(fd, 1);
  const int err = errno;
  ::close(fd);
  return rc == 0 ? std::string() : std::string(std::strerror(err));
}

}  // namespace ramguard
