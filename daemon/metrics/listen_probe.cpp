#include "metrics/listen_probe.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ramguard {

std::string probe_listen_error(const Endpoint& address) {
  const int family = address.ipv6() ? AF_INET6 : AF_INET;
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return std::string("cannot create a socket: ") + std::strerror(errno);
  // Same option civetweb sets, so a port in TIME_WAIT is not reported as taken.
  const int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  int rc = 0;
  if (address.ipv6()) {
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
