#include "control/server.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include "common/log.hpp"
#include "control/codec.hpp"
#include "control/commands.hpp"
#include "control/frame_codec.hpp"
#include "control/rate_limiter.hpp"
#include "control/session.hpp"

namespace ramguard::control {
namespace {

using asio::use_awaitable;
using local_socket = asio::local::stream_protocol::socket;

// How often a lost socket path is reported while it cannot be recreated.
constexpr auto kSocketComplaintInterval = std::chrono::minutes(1);

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

Peer tcp_peer(asio::ip::tcp::socket& socket) {
  Peer peer;
  // Privileged only through the token, which serve_request checks on every request.
  peer.token_verified = true;
  asio::error_code ec;
  auto remote = socket.remote_endpoint(ec);
  peer.description =
      "tcp " +
      (ec ? std::string("?") : remote.address().to_string() + ":" + std::to_string(remote.port()));
  return peer;
}

bool may_be_big(const v1::Request& request) {
  const CommandSpec* spec = command_spec(request.command_case());
  return spec != nullptr && spec->big_reply;
}

// A coroutine, not a capturing lambda: its frame owns the reply while it runs on the encoder.
asio::awaitable<std::string> encode_elsewhere(v1::Reply reply, v1::Framing framing) {
  co_return encode_reply_in(reply, framing);
}

// A mark applied in time whose reply waited past the client's deadline for the ledger's
// fdatasync (a slow disk): the client counts it as not delivered and resynchronises from the
// run's status on its next call, which shows the mark at its own time. Logged so the disagreement
// in between is visible.
void note_late_mark_reply(const v1::MarkRequest& mark, const v1::Reply& reply) {
  if (mark.deadline_unix_us() == 0 || reply.has_error()) return;
  const auto now_us = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  if (now_us <= mark.deadline_unix_us()) return;
  log::info("control.mark_reply_late",
            {{"run", mark.run_id()}, {"late_ms", (now_us - mark.deadline_unix_us()) / 1000}});
}

// The peer as the log's drop line names it: its UID, which its lines are charged to.
std::string peer_log_name(const Peer& peer) {
  return peer.uid == static_cast<uid_t>(-1) ? std::string("tcp or unknown peers")
                                            : "uid " + std::to_string(peer.uid);
}

}  // namespace

ControlServer::ControlServer(asio::io_context& io, RequestHandler& handler, ServerLimits limits,
                             std::string server_version)
    : io_(io),
      handler_(handler),
      limits_(limits),
      server_version_(std::move(server_version)),
      socket_check_(io),
      slots_(std::make_shared<ConnectionSlots>(::geteuid())),
      commits_(io.get_executor(), [this] { return handler_.flush_writes(); }) {}

ControlServer::~ControlServer() {
  stop();
  encoder_.join();
}

Status ControlServer::listen_unix(const std::filesystem::path& path, mode_t mode,
                                  std::optional<gid_t> group) {
  auto bound = bind_socket_file(io_, path, mode, group);
  if (!bound) return bound.error();
  socket_path_ = path;
  socket_mode_ = mode;
  socket_group_ = group;
  use_socket(std::move(*bound));
  schedule_socket_check();
  return ok_status();
}

void ControlServer::use_socket(BoundSocket bound) {
  if (unix_acceptor_) {
    asio::error_code ec;
    unix_acceptor_->close(ec);  // its accept loop ends; the file it was bound to is gone
  }
  unix_acceptor_ = std::move(bound.acceptor);
  socket_identity_ = bound.identity;
  asio::co_spawn(io_, accept_loop(unix_acceptor_), asio::detached);
}

void ControlServer::schedule_socket_check() {
  socket_check_.expires_after(limits_.socket_check_interval);
  socket_check_.async_wait([this, stopped = stopped_](const asio::error_code& ec) {
    if (ec || *stopped) return;
    check_socket();
    schedule_socket_check();
  });
}

void ControlServer::check_socket() {
  const auto now_there = identity_of(socket_path_);
  if (now_there && *now_there == socket_identity_) return;
  const std::string what = now_there ? "was replaced by another file" : "was removed";
  // bind_socket_file takes the path only when it is free or holds a dead socket: never a live
  // daemon's socket, never an operator's file.
  auto bound = bind_socket_file(io_, socket_path_, socket_mode_, socket_group_);
  if (bound) {
    log::warning("control.socket_recreated",
                 {{"socket", socket_path_.string()}, {"reason", "the socket file " + what}});
    use_socket(std::move(*bound));
    last_socket_complaint_ = {};
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (last_socket_complaint_ != std::chrono::steady_clock::time_point{} &&
      now - last_socket_complaint_ < kSocketComplaintInterval) {
    return;
  }
  last_socket_complaint_ = now;
  log::error("control.socket_lost",
             {{"socket", socket_path_.string()},
              {"reason", "the socket file " + what + "; " + bound.error().message},
              {"effect", "clients cannot reach this daemon at this path; retrying"}});
}

Status ControlServer::listen_tcp(const Endpoint& address, std::string token) {
  if (token.empty()) return Error{"TCP control listener requires a non-empty token"};
  asio::error_code ec;
  const auto ip = asio::ip::make_address(address.host, ec);
  if (ec) return Error{"TCP listen address '" + address.to_string() + "': " + ec.message()};
  const asio::ip::tcp::endpoint endpoint(ip, address.port);
  auto acceptor = std::make_shared<asio::ip::tcp::acceptor>(io_);
  acceptor->open(endpoint.protocol(), ec);
  if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor->bind(endpoint, ec);
  if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Error{"cannot listen on TCP " + address.to_string() + ": " + ec.message()};
  tcp_token_ = std::move(token);
  tcp_acceptor_ = std::move(acceptor);
  asio::co_spawn(io_, accept_loop(tcp_acceptor_), asio::detached);
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
  socket_check_.cancel();
  if (unix_acceptor_) {
    unix_acceptor_->close(ec);
    // Another daemon may own the path by now: remove the file only if it is still ours.
    if (identity_of(socket_path_) == socket_identity_) {
      std::error_code fs_ec;
      std::filesystem::remove(socket_path_, fs_ec);
    }
  }
  if (tcp_acceptor_) tcp_acceptor_->close(ec);
}

template <typename Acceptor>
asio::awaitable<void> ControlServer::accept_loop(std::shared_ptr<Acceptor> acceptor) {
  auto stopped = stopped_;
  for (;;) {
    asio::error_code ec;
    auto socket = co_await acceptor->async_accept(asio::redirect_error(use_awaitable, ec));
    if (*stopped) co_return;
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor->is_open()) co_return;
      // e.g. EMFILE: keep serving the connections we have, without spinning on the error.
      asio::steady_timer pause(io_, std::chrono::milliseconds(100));
      co_await pause.async_wait(asio::redirect_error(use_awaitable, ec));
      if (*stopped) co_return;
      continue;
    }
    using Socket = decltype(socket);
    constexpr bool tcp = !std::is_same_v<Socket, local_socket>;
    Peer peer;
    if constexpr (tcp) {
      peer = tcp_peer(socket);
    } else {
      peer = unix_peer(socket);
    }
    auto slot = ConnectionSlots::take(slots_, peer, limits_);
    if (auto* refusal = std::get_if<std::string>(&slot)) {
      v1::Reply reply =
          error_reply(nullptr, make_error(v1::Error::RESOURCE_EXHAUSTED, std::move(*refusal)));
      reply.set_server_version(server_version_);
      const std::string line = encode_reply(reply);
      asio::error_code write_ec;
      asio::write(socket, asio::buffer(line), write_ec);
      continue;
    }
    SessionContext context{[this](Incoming incoming, const Peer& p, RateLimiter& limiter) {
                             return serve_request(std::move(incoming), p, limiter, tcp);
                           },
                           limits_, stopped_};
    auto session = std::make_shared<Session<Socket>>(
        std::move(socket), std::move(peer),
        std::move(std::get<std::unique_ptr<ConnectionSlots::Slot>>(slot)), std::move(context));
    Session<Socket>::start(std::move(session));
  }
}

asio::awaitable<void> ControlServer::prepared(const v1::Request& request) {
  // The handler calls `ready` from a completion on this loop (or at once); resuming through a
  // post keeps the coroutine off the caller's stack either way.
  co_await asio::async_initiate<const asio::use_awaitable_t<>&, void()>(
      [this, &request](auto handler) {
        auto shared = std::make_shared<decltype(handler)>(std::move(handler));
        handler_.prepare(request, [shared] {
          auto executor = asio::get_associated_executor(*shared);
          asio::post(executor, std::move(*shared));
        });
      },
      use_awaitable);
}

asio::awaitable<Served> ControlServer::serve_request(Incoming incoming, const Peer& peer,
                                                     RateLimiter& limiter, bool tcp) {
  const v1::Framing framing = incoming.framing;
  Served served{{}, framing};
  v1::Reply reply;
  Decoded& decoded = incoming.decoded;
  // Every line a request causes is charged to its user (common/log.hpp). The scope is thread
  // local, so it is opened only around code that does not suspend: another peer's request may
  // run on this thread while this one waits.
  const std::string log_name = peer_log_name(peer);
  const auto rate_error = [this] {
    return make_error(v1::Error::RESOURCE_EXHAUSTED,
                      "request rate above " +
                          std::to_string(static_cast<long>(limits_.max_requests_per_second)) +
                          " per second on this connection");
  };
  if (auto* error = std::get_if<v1::Error>(&decoded)) {
    // A malformed request costs the loop a decode too: it spends a token like any other.
    reply = error_reply(nullptr, limiter.allow() ? std::move(*error) : rate_error());
  } else {
    const v1::Request& request = std::get<v1::Request>(decoded);
    if (tcp && request.token() != tcp_token_) {
      reply = error_reply(&request, make_error(v1::Error::PERMISSION_DENIED,
                                               "missing or wrong token for the TCP listener"));
    } else if (!limiter.allow()) {
      reply = error_reply(&request, rate_error());
    } else if (auto invalid = check_fields(request)) {
      reply = error_reply(&request, std::move(*invalid));
    } else {
      reply.set_version(kProtocolVersion);
      reply.set_request_id(request.request_id());
      if (handler_.wants_prepare(request)) co_await prepared(request);
      RequestHandler::Answer answer;
      {
        const log::PeerScope log_scope(peer.uid, log_name, !peer.privileged());
        answer = handler_.handle(request, peer);
      }
      // Whether this request's writes are durable is known before its reply is built: a reply
      // never says stored or admitted before its record is in the ledger.
      const bool waited = handler_.writes_pending();
      bool durable = true;
      if (waited) durable = co_await commits_.wait();
      {
        const log::PeerScope log_scope(peer.uid, log_name, !peer.privileged());
        answer(reply, durable);
        if (waited && request.has_mark()) note_late_mark_reply(request.mark(), reply);
      }
      if (request.has_hello() && reply.has_hello()) {
        served.framing = choose_framing(request.hello(), framing);
        reply.mutable_hello()->set_framing(served.framing);
      }
      if (may_be_big(request) && !reply.has_error()) {
        reply.set_server_version(server_version_);
        served.reply = co_await asio::co_spawn(
            encoder_, encode_elsewhere(std::move(reply), framing), use_awaitable);
        co_return served;
      }
    }
  }
  reply.set_server_version(server_version_);
  served.reply = encode_reply_in(reply, framing);
  co_return served;
}

}  // namespace ramguard::control
