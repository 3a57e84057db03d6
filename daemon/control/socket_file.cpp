#include "control/socket_file.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace ramguard::control {

std::optional<FileIdentity> identity_of(const std::filesystem::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) return std::nullopt;
  return FileIdentity{st.st_dev, st.st_ino};
}

bool someone_listens(const std::filesystem::path& path) {
  // Non-blocking: a daemon whose backlog is full must not hang this one (EAGAIN says it lives).
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  std::strncpy(address.sun_path, path.c_str(), sizeof address.sun_path - 1);
  const int rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address);
  const int error = errno;
  ::close(fd);
  return rc == 0 || error == EAGAIN || error == EINPROGRESS;
}

Result<BoundSocket> bind_socket_file(asio::io_context& io, const std::filesystem::path& path,
                                     mode_t mode, std::optional<gid_t> group) {
  std::error_code fs_ec;
  const auto status = std::filesystem::symlink_status(path, fs_ec);
  if (!fs_ec && std::filesystem::exists(status)) {
    if (!std::filesystem::is_socket(status)) {
      return Error{"control socket path " + path.string() + " exists and is not a socket"};
    }
    if (someone_listens(path)) {
      return Error{"another daemon answers on control socket " + path.string()};
    }
    std::filesystem::remove(path, fs_ec);  // stale: its daemon is gone
  }
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), fs_ec);
  auto acceptor = std::make_shared<asio::local::stream_protocol::acceptor>(io);
  asio::error_code ec;
  acceptor->open(asio::local::stream_protocol(), ec);
  // The socket file is created with `mode` from the start: no window where it is wider.
  const mode_t old_mask = ::umask(static_cast<mode_t>(~mode & 0777));
  if (!ec) acceptor->bind(asio::local::stream_protocol::endpoint(path.string()), ec);
  ::umask(old_mask);
  // The group before listen(): no client of that group connects to a file it does not own yet.
  if (!ec && group && ::chown(path.c_str(), static_cast<uid_t>(-1), *group) != 0) {
    const int error = errno;
    acceptor->close(ec);
    std::filesystem::remove(path, fs_ec);
    return Error{"cannot give control socket " + path.string() + " to group " +
                 std::to_string(*group) + ": " + std::strerror(error) +
                 (error == EPERM ? " (the daemon must be a member of that group, e.g. through "
                                   "SupplementaryGroups= or supplementalGroups, or hold CAP_CHOWN)"
                                 : "")};
  }
  if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error{"cannot listen on control socket " + path.string() + ": " + ec.message()};
  ::chmod(path.c_str(), mode);
  const auto identity = identity_of(path);
  if (!identity) return Error{"control socket " + path.string() + " vanished right after bind"};
  return BoundSocket{std::move(acceptor), *identity};
}

}  // namespace ramguard::control
