#pragma once
// The control server: a Unix socket (and optionally a loopback TCP listener with a token), one
// session per connection on the daemon's io_context (session.hpp), one JSON line in, one JSON
// line out (or one protobuf length-delimited frame each way, once a hello chose that framing). It
// shares connection slots fairly between users and keeps its socket file alive.

#include <sys/types.h>

#include <asio.hpp>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "control/commit_batch.hpp"
#include "control/connection_slots.hpp"
#include "control/handler.hpp"
#include "control/limits.hpp"
#include "control/session.hpp"
#include "control/socket_file.hpp"
#include "model/endpoint.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard::control {

class RateLimiter;

class ControlServer {
 public:
  ControlServer(asio::io_context& io, RequestHandler& handler, ServerLimits limits,
                std::string server_version);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // Binds the socket with `mode` permissions. A leftover socket file is replaced only when no
  // daemon answers on it; anything else at the path is an error naming it. From then on the
  // path is checked every socket_check_interval and the socket recreated if it was removed.
  Status listen_unix(const std::filesystem::path& path, mode_t mode,
                     std::optional<gid_t> group = std::nullopt);
  // Port 0 picks one (tcp_port()); every request must carry `token`.
  Status listen_tcp(const Endpoint& address, std::string token);

  // Stops accepting; removes the socket file only if it is still the one this server created.
  void stop();
  std::size_t connections() const { return slots_->total(); }
  std::optional<std::uint16_t> tcp_port() const;
  const std::filesystem::path& socket_path() const { return socket_path_; }
  void set_limits(const ServerLimits& limits) { limits_ = limits; }
  // Flushes the handler's writes at the end of this turn with no request waiting: the store
  // calls it when writes outside any request (progress, exits) open a batch.
  void schedule_commit() { commits_.schedule(); }

 private:
  using UnixAcceptor = asio::local::stream_protocol::acceptor;
  template <typename Acceptor>
  asio::awaitable<void> accept_loop(std::shared_ptr<Acceptor> acceptor);
  // Checks and dispatches one decoded request. Big replies (queries) are encoded on the
  // encoder thread: the event loop keeps sampling and serving meanwhile.
  asio::awaitable<Served> serve_request(Incoming incoming, const Peer& peer, RateLimiter& limiter,
                                        bool tcp);
  // Waits until the handler has what `request` needs from elsewhere (RequestHandler::prepare).
  asio::awaitable<void> prepared(const v1::Request& request);
  void use_socket(BoundSocket bound);
  void schedule_socket_check();
  void check_socket();

  asio::io_context& io_;
  RequestHandler& handler_;
  ServerLimits limits_;
  std::string server_version_;
  std::string tcp_token_;
  std::filesystem::path socket_path_;
  mode_t socket_mode_ = 0660;
  std::optional<gid_t> socket_group_;  // kept for re-creating the file
  FileIdentity socket_identity_;
  std::shared_ptr<UnixAcceptor> unix_acceptor_;
  std::shared_ptr<asio::ip::tcp::acceptor> tcp_acceptor_;
  asio::steady_timer socket_check_;
  std::chrono::steady_clock::time_point last_socket_complaint_{};
  std::shared_ptr<ConnectionSlots> slots_;
  std::shared_ptr<bool> stopped_ = std::make_shared<bool>(false);
  asio::thread_pool encoder_{1};
  CommitBatch commits_;  // last: its pending write refers to handler_
};

}  // namespace ramguard::control
