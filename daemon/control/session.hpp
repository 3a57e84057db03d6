#pragma once
// One control connection. Each request (a JSON line, or a binary frame once a hello chose that
// framing: request_reader.hpp) is answered as soon as it is served, and the
// daemon holds a bounded amount of output the client has not read: above the bound it reads no
// further request until the client drains it, and closes the connection if the client stays
// stuck (or idle) past a timeout. Between requests it yields, so one connection never holds
// the event loop that samples and serves everyone else.

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "control/connection_slots.hpp"
#include "control/limits.hpp"
#include "control/peer.hpp"
#include "control/rate_limiter.hpp"
#include "control/request_reader.hpp"

namespace ramguard::control {

// What a session needs from its server, as plain functions (the server outlives no session's
// need: both are only called while the io_context runs).
struct Served {
  std::string reply;                             // encoded in the request's framing
  v1::Framing framing = v1::FRAMING_JSON_LINES;  // the connection's framing from now on
};

struct SessionContext {
  // The reply to one request (or to the error the reader found in its bytes).
  std::function<asio::awaitable<Served>(Incoming incoming, const Peer& peer, RateLimiter& limiter)>
      serve;
  ServerLimits limits;
  std::shared_ptr<bool> stopped;
};

template <typename Socket>
class Session : public std::enable_shared_from_this<Session<Socket>> {
 public:
  Session(Socket socket, Peer peer, std::unique_ptr<ConnectionSlots::Slot> slot,
          SessionContext context);
  // Runs the session on the socket's executor until the connection ends.
  static void start(std::shared_ptr<Session> self);

 private:
  using Clock = std::chrono::steady_clock;

  // A static coroutine owning `self`: the session lives as long as it reads.
  static asio::awaitable<void> serve(std::shared_ptr<Session> self);
  asio::awaitable<void> read_requests();
  asio::awaitable<void> watch_progress();
  // Waits until at most `bytes` of output are unread; false when the connection closed.
  asio::awaitable<bool> drained_to(std::size_t bytes);
  void queue(std::string reply);
  void write_more();
  // Closes the connection; a non-empty reason is logged.
  void close(const std::string& reason);
  std::size_t unread() const { return sending_.size() - sent_ + queued_.size(); }

  Socket socket_;
  Peer peer_;
  std::unique_ptr<ConnectionSlots::Slot> slot_;
  SessionContext context_;
  RateLimiter limiter_;
  std::string sending_;  // handed to the socket; stable while a write is in flight
  std::size_t sent_ = 0;
  std::string queued_;  // replies produced since
  bool writing_ = false;
  bool closed_ = false;
  asio::steady_timer drained_;  // the reader waits on it; every write progress cancels it
  asio::steady_timer tick_;
  Clock::time_point last_request_;
  Clock::time_point last_progress_;
};

}  // namespace ramguard::control
