#include "line_socket.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "codec.hpp"
#include "ramguard/error.hpp"

namespace ramguard::detail {
namespace {

std::string errno_text(int error) {
  return std::strerror(error);
}

int remaining_ms(LineSocket::Deadline deadline) {
  const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
  if (left.count() <= 0) return 0;
  return left.count() > 1'000'000'000 ? 1'000'000'000 : static_cast<int>(left.count());
}

}  // namespace

void LineSocket::connect(const std::string& path, Deadline deadline) {
  close();
  path_ = path;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path)) {
    throw ClientError(ClientError::Kind::kTransport,
                      "cannot connect to ramguard socket '" + path +
                          "': a socket path must be 1 to " +
                          std::to_string(sizeof(address.sun_path) - 1) + " bytes");
  }
  std::memcpy(address.sun_path, path.data(), path.size());
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    throw ClientError(ClientError::Kind::kTransport,
                      "cannot create a socket for '" + path + "': " + errno_text(errno));
  }
  fd_ = fd;
  if (::connect(fd_, reinterpret_cast<const sockaddr*>(&address), sizeof address) != 0) {
    const int error = errno;
    if (error != EINPROGRESS && error != EAGAIN) {
      close();
      throw ClientError(ClientError::Kind::kTransport,
                        "cannot connect to ramguard socket '" + path + "': " + errno_text(error) +
                            " (is ramguardd running? set --socket or RAMGUARD_SOCKET)");
    }
    wait_for(POLLOUT, deadline, "connecting");
    int so_error = 0;
    socklen_t length = sizeof so_error;
    ::getsockopt(fd_, SOL_SOCKET, SO_ERROR, &so_error, &length);
    if (so_error != 0) {
      close();
      throw ClientError(ClientError::Kind::kTransport, "cannot connect to ramguard socket '" +
                                                           path + "': " + errno_text(so_error));
    }
  }
}

bool LineSocket::peer_closed() const {
  if (fd_ < 0) return true;
  pollfd entry{fd_, POLLIN, 0};
  if (::poll(&entry, 1, 0) <= 0) return false;
  if ((entry.revents & (POLLHUP | POLLERR)) != 0) return true;
  char byte;
  return ::recv(fd_, &byte, 1, MSG_PEEK) == 0;
}

void LineSocket::close() noexcept {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  buffer_.clear();
}

void LineSocket::wait_for(short events, Deadline deadline, const char* what) {
  for (;;) {
    pollfd entry{fd_, events, 0};
    const int ready = ::poll(&entry, 1, remaining_ms(deadline));
    if (ready > 0) return;  // readable/writable, or an error the next syscall reports
    if (ready < 0 && errno == EINTR) continue;
    const int error = errno;
    close();
    if (ready == 0) {
      throw ClientError(ClientError::Kind::kTimeout,
                        std::string("timed out ") + what + " on ramguard socket '" + path_ + "'");
    }
    throw ClientError(ClientError::Kind::kTransport,
                      "poll failed on ramguard socket '" + path_ + "': " + errno_text(error));
  }
}

void LineSocket::write_line(std::string_view line, Deadline deadline) {
  std::string frame(line);
  frame.push_back('\n');
  write_bytes(frame, deadline);
}

void LineSocket::write_bytes(std::string_view bytes, Deadline deadline) {
  std::size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<std::size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      wait_for(POLLOUT, deadline, "sending");
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      const int error = errno;
      close();
      throw ClientError(ClientError::Kind::kTransport,
                        "cannot send to ramguard socket '" + path_ + "': " + errno_text(error));
    }
  }
}

void LineSocket::receive(Deadline deadline) {
  // A reply is hardly ever there the moment its request is sent: wait, then read (two calls
  // into the kernel instead of recv, EAGAIN, poll, recv).
  wait_for(POLLIN, deadline, "waiting for a reply");
  for (;;) {
    char chunk[16384];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n > 0) {
      buffer_.append(chunk, static_cast<std::size_t>(n));
      return;
    }
    if (n == 0) {
      close();
      throw ClientError(ClientError::Kind::kTransport,
                        "ramguard socket '" + path_ + "' closed the connection before replying");
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      wait_for(POLLIN, deadline, "waiting for a reply");
    } else if (errno != EINTR) {
      const int error = errno;
      close();
      throw ClientError(ClientError::Kind::kTransport,
                        "cannot read from ramguard socket '" + path_ + "': " + errno_text(error));
    }
  }
}

std::string LineSocket::read_line(std::size_t max_bytes, Deadline deadline) {
  for (;;) {
    const std::size_t newline = buffer_.find('\n');
    if (newline != std::string::npos) {
      if (newline > max_bytes) break;
      std::string line = buffer_.substr(0, newline);
      buffer_.erase(0, newline + 1);
      return line;
    }
    if (buffer_.size() > max_bytes) break;
    receive(deadline);
  }
  close();  // the rest of the oversized frame would desynchronize the next call
  throw ClientError(ClientError::Kind::kProtocol, "reply from ramguard socket '" + path_ +
                                                      "' exceeds the frame limit of " +
                                                      std::to_string(max_bytes) + " bytes");
}

std::string LineSocket::read_frame(std::size_t max_bytes, Deadline deadline) {
  for (;;) {
    std::optional<std::size_t> size;
    try {
      size = frame_size(buffer_, max_bytes, path_);
    } catch (const ClientError&) {
      close();  // frame sync is lost
      throw;
    }
    if (size && buffer_.size() >= *size) {
      std::string frame = buffer_.substr(0, *size);
      buffer_.erase(0, *size);
      return frame;
    }
    receive(deadline);
  }
}

}  // namespace ramguard::detail
