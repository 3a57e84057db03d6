#pragma once
// The control server: a Unix socket (and optionally a loopback TCP listener with a token), one
// coroutine per connection on the daemon's io_context, one JSON line in, one JSON line out.

#include <sys/types.h>

#include <asio.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "common/result.hpp"
#include "control/handler.hpp"
#include "control/limits.hpp"

namespace ramguard::control {

class ControlServer {
 public:
  ControlServer(asio::io_context& io, RequestHandler& handler, ServerLimits limits,
                std::string server_version);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // Binds the socket with `mode` permissions. A leftover socket file is replaced only when no
  // daemon answers on it; anything else at the path is an error naming it.
  Status listen_unix(const std::filesystem::path& path, mode_t mode);
  // HOST:PORT (port 0 picks one); every request must carry `token`.
  Status listen_tcp(const std::string& host_port, std::string token);

  void stop();
  std::size_t connections() const { return *connections_; }
  std::optional<std::uint16_t> tcp_port() const;
  const std::filesystem::path& socket_path() const { return socket_path_; }
  void set_limits(const ServerLimits& limits) { limits_ = limits; }

 private:
  template <typename Acceptor>
  asio::awaitable<void> accept_loop(Acceptor& acceptor, bool tcp);
  template <typename Socket>
  asio::awaitable<void> session(Socket socket, Peer peer);
  void serve_line(std::string_view line, const Peer& peer, std::string& out,
                  class RateLimiter& limiter, bool tcp);

  asio::io_context& io_;
  RequestHandler& handler_;
  ServerLimits limits_;
  std::string server_version_;
  std::string tcp_token_;
  std::filesystem::path socket_path_;
  std::unique_ptr<asio::local::stream_protocol::acceptor> unix_acceptor_;
  std::unique_ptr<asio::ip::tcp::acceptor> tcp_acceptor_;
  std::shared_ptr<std::size_t> connections_ = std::make_shared<std::size_t>(0);
  std::shared_ptr<bool> stopped_ = std::make_shared<bool>(false);
};

}  // namespace ramguard::control
