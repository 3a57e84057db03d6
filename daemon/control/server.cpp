#include "control/server.hpp"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "control/codec.hpp"
#include "control/rate_limiter.hpp"

namespace ramguard::control {
namespace {

using asio::use_awaitable;
using local_socket = asio::local::stream_protocol::socket;

Peer unix_peer(local_socket& socket) {
  Peer peer;
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(socket.native_handle(), SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
    peer.pid = cred.pid;
    peer.uid = cred.uid;
    peer.credentials_known = true;
    peer.description = "pid " + std::to_string(cred.pid) + " uid " + std::to_string(cred.uid);
  } else {
    // Without credentials the peer is unknown: never privileged on the Unix socket.
    peer.credentials_known = true;
    peer.uid = static_cast<uid_t>(-1);
    peer.description = "unknown unix peer";
  }
  return peer;
}

// True when something accepts connections on `path`: then it is a live daemon, not stale.
bool someone_listens(const std::filesystem::path& path) {
  asio::io_context probe_io;
  local_socket probe(probe_io);
  asio::error_code ec;
  probe.connect(asio::local::stream_protocol::endpoint(path.string()), ec);
  return !ec;
}

Result<asio::ip::tcp::endpoint> parse_host_port(const std::string& text) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos)
    return Error{"TCP listen address '" + text + "' is not HOST:PORT"};
  std::string host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  asio::error_code ec;
  auto address = asio::ip::make_address(host, ec);
  if (ec) return Error{"TCP listen address '" + text + "': '" + host + "' is not an IP address"};
  int port = -1;
  try {
    port = std::stoi(text.substr(colon + 1));
  } catch (...) {
  }
  if (port < 0 || port > 65535) return Error{"TCP listen address '" + text + "': bad port"};
  return asio::ip::tcp::endpoint(address, static_cast<unsigned short>(port));
}

}  // namespace

ControlServer::ControlServer(asio::io_context& io, RequestHandler& handler, ServerLimits limits,
                             std::string server_version)
    : io_(io), handler_(handler), limits_(limits), server_version_(std::move(server_version)) {}

ControlServer::~ControlServer() {
  stop();
}

Status ControlServer::listen_unix(const std::filesystem::path& path, mode_t mode) {
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
  auto acceptor = std::make_unique<asio::local::stream_protocol::acceptor>(io_);
  asio::error_code ec;
  acceptor->open(asio::local::stream_protocol(), ec);
  // The socket file is created with `mode` from the start: no window where it is wider.
  const mode_t old_mask = ::umask(static_cast<mode_t>(~mode & 0777));
  if (!ec) acceptor->bind(asio::local::stream_protocol::endpoint(path.string()), ec);
  ::umask(old_mask);
  if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error{"cannot listen on control socket " + path.string() + ": " + ec.message()};
  ::chmod(path.c_str(), mode);
  socket_path_ = path;
  unix_acceptor_ = std::move(acceptor);
  asio::co_spawn(io_, accept_loop(*unix_acceptor_, false), asio::detached);
  return ok_status();
}

Status ControlServer::listen_tcp(const std::string& host_port, std::string token) {
  if (token.empty()) return Error{"TCP control listener requires a non-empty token"};
  auto endpoint = parse_host_port(host_port);
  if (!endpoint) return endpoint.error();
  auto acceptor = std::make_unique<asio::ip::tcp::acceptor>(io_);
  asio::error_code ec;
  acceptor->open(endpoint->protocol(), ec);
  if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(*endpoint, ec);
  if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error{"cannot listen on TCP " + host_port + ": " + ec.message()};
  tcp_token_ = std::move(token);
  tcp_acceptor_ = std::move(acceptor);
  asio::co_spawn(io_, accept_loop(*tcp_acceptor_, true), asio::detached);
  return ok_status();
}

std::optional<std::uint16_t> ControlServer::tcp_port() const {
  if (!tcp_acceptor_) return std::nullopt;
  asio::error_code ec;
  auto endpoint = tcp_acceptor_->local_endpoint(ec);
  if (ec) return std::nullopt;
  return endpoint.port();
}

void ControlServer::stop() {
  if (*stopped_) return;
  *stopped_ = true;
  asio::error_code ec;
  if (unix_acceptor_) {
    unix_acceptor_->close(ec);
    std::filesystem::remove(socket_path_, ec);
  }
  if (tcp_acceptor_) tcp_acceptor_->close(ec);
}

template <typename Acceptor>
asio::awaitable<void> ControlServer::accept_loop(Acceptor& acceptor, bool tcp) {
  auto stopped = stopped_;
  for (;;) {
    asio::error_code ec;
    auto socket = co_await acceptor.async_accept(asio::redirect_error(use_awaitable, ec));
    if (*stopped) co_return;
    if (ec) {
      if (ec == asio::error::operation_aborted) co_return;
      continue;  // e.g. EMFILE: keep serving the connections we have
    }
    if (*connections_ >= limits_.max_connections) {
      v1::Reply reply = error_reply(
          nullptr, make_error(v1::Error::RESOURCE_EXHAUSTED,
                              "too many connections (limit " +
                                  std::to_string(limits_.max_connections) + "); try again later"));
      reply.set_server_version(server_version_);
      const std::string line = encode_reply(reply);
      asio::error_code write_ec;
      asio::write(socket, asio::buffer(line), write_ec);
      continue;
    }
    Peer peer;
    if constexpr (std::is_same_v<decltype(socket), local_socket>) {
      peer = unix_peer(socket);
    } else {
      asio::error_code remote_ec;
      auto remote = socket.remote_endpoint(remote_ec);
      peer.credentials_known = false;
      peer.description =
          "tcp " + (remote_ec ? std::string("?")
                              : remote.address().to_string() + ":" + std::to_string(remote.port()));
    }
    (void)tcp;
    asio::co_spawn(io_, session(std::move(socket), std::move(peer)), asio::detached);
  }
}

void ControlServer::serve_line(std::string_view line, const Peer& peer, std::string& out,
                               RateLimiter& limiter, bool tcp) {
  v1::Reply reply;
  Decoded decoded = decode_request(line);
  if (auto* error = std::get_if<v1::Error>(&decoded)) {
    reply = error_reply(nullptr, std::move(*error));
  } else {
    const v1::Request& request = std::get<v1::Request>(decoded);
    if (tcp && request.token() != tcp_token_) {
      reply = error_reply(&request, make_error(v1::Error::PERMISSION_DENIED,
                                               "missing or wrong token for the TCP listener"));
    } else if (!limiter.allow()) {
      reply = error_reply(
          &request,
          make_error(v1::Error::RESOURCE_EXHAUSTED,
                     "request rate above " +
                         std::to_string(static_cast<long>(limits_.max_requests_per_second)) +
                         " per second on this connection"));
    } else {
      reply.set_version(kProtocolVersion);
      reply.set_request_id(request.request_id());
      handler_.handle(request, peer, reply);
    }
  }
  reply.set_server_version(server_version_);
  out += encode_reply(reply);
}

template <typename Socket>
asio::awaitable<void> ControlServer::session(Socket socket, Peer peer) {
  auto connections = connections_;
  ++*connections;
  struct Count {
    std::shared_ptr<std::size_t> n;
    ~Count() { --*n; }
  } count{connections};
  auto stopped = stopped_;
  const bool tcp = !std::is_same_v<Socket, local_socket>;
  RateLimiter limiter(limits_.max_requests_per_second);
  std::string pending;      // bytes of the current, incomplete line
  bool discarding = false;  // inside an oversized line: drop bytes until its newline
  std::array<char, 16 * 1024> chunk{};
  for (;;) {
    asio::error_code ec;
    const std::size_t n = co_await socket.async_read_some(asio::buffer(chunk),
                                                          asio::redirect_error(use_awaitable, ec));
    if (ec || *stopped) co_return;
    std::string out;
    std::string_view data(chunk.data(), n);
    while (!data.empty()) {
      const auto newline = data.find('\n');
      const std::string_view piece = data.substr(0, newline);
      if (!discarding) pending.append(piece);
      if (pending.size() > limits_.max_frame_bytes) {
        discarding = true;
        pending.clear();
      }
      if (newline == std::string_view::npos) break;
      data.remove_prefix(newline + 1);
      if (discarding) {
        v1::Reply reply = error_reply(
            nullptr, make_error(v1::Error::RESOURCE_EXHAUSTED,
                                "request line longer than the frame limit of " +
                                    std::to_string(limits_.max_frame_bytes) + " bytes"));
        reply.set_server_version(server_version_);
        out += encode_reply(reply);
        discarding = false;
      } else if (!pending.empty()) {
        serve_line(pending, peer, out, limiter, tcp);
      }
      pending.clear();
    }
    if (!out.empty()) {
      co_await asio::async_write(socket, asio::buffer(out),
                                 asio::redirect_error(use_awaitable, ec));
      if (ec) co_return;
    }
  }
}

}  // namespace ramguard::control
