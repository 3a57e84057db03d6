#include "control/session.hpp"

#include <algorithm>
#include <array>
#include <cstdio>

#include "common/log.hpp"

namespace ramguard::control {
namespace {

using asio::use_awaitable;

// Buffers that once held a big reply are given back when drained: an idle connection is small.
constexpr std::size_t kKeepCapacityBytes = 64 * 1024;

std::string seconds_text(std::chrono::nanoseconds d) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1fs", std::chrono::duration<double>(d).count());
  return text;
}

}  // namespace

template <typename Socket>
Session<Socket>::Session(Socket socket, Peer peer, std::unique_ptr<ConnectionSlots::Slot> slot,
                         SessionContext context)
    : socket_(std::move(socket)),
      peer_(std::move(peer)),
      slot_(std::move(slot)),
      context_(std::move(context)),
      limiter_(context_.limits.max_requests_per_second),
      drained_(socket_.get_executor()),
      tick_(socket_.get_executor()),
      last_request_(Clock::now()),
      last_progress_(last_request_) {}

template <typename Socket>
void Session<Socket>::start(std::shared_ptr<Session> self) {
  auto executor = self->socket_.get_executor();
  asio::co_spawn(executor, self->watch_progress(), asio::detached);
  asio::co_spawn(executor, serve(std::move(self)), asio::detached);
}

template <typename Socket>
asio::awaitable<void> Session<Socket>::serve(std::shared_ptr<Session> self) {
  co_await self->read_requests();
  self->close("");  // also ends the watchdog, so the slot is free at once
}

template <typename Socket>
asio::awaitable<void> Session<Socket>::read_requests() {
  const std::size_t bound = context_.limits.max_unread_output_bytes;
  RequestReader reader(context_.limits.max_frame_bytes);
  std::array<char, 16 * 1024> chunk{};
  for (;;) {
    if (!co_await drained_to(bound)) co_return;
    asio::error_code ec;
    const std::size_t n = co_await socket_.async_read_some(asio::buffer(chunk),
                                                           asio::redirect_error(use_awaitable, ec));
    if (closed_ || *context_.stopped) co_return;
    if (ec == asio::error::eof) {
      // The client half-closed: its last request may lack a newline, and it still reads.
      if (auto last = reader.finish()) {
        Served served = co_await context_.serve(std::move(*last), peer_, limiter_);
        queue(std::move(served.reply));
      }
      co_await drained_to(0);
      co_return;
    }
    if (ec) co_return;
    reader.append(std::string_view(chunk.data(), n));
    while (auto incoming = reader.next()) {
      last_request_ = Clock::now();
      const bool close_after = incoming->close_after;
      Served served = co_await context_.serve(std::move(*incoming), peer_, limiter_);
      if (closed_ || *context_.stopped) co_return;
      queue(std::move(served.reply));
      // The hello's reply went out in the old framing; what follows is in the chosen one.
      reader.use_framing(served.framing);
      if (close_after) {
        // Frame sync is lost: the error reply is the last thing this connection carries.
        co_await drained_to(0);
        co_return;
      }
      // Let sampling and other clients run between two requests of this one.
      co_await asio::post(socket_.get_executor(), use_awaitable);
      if (closed_ || *context_.stopped) co_return;
      if (!co_await drained_to(bound)) co_return;
    }
  }
}

template <typename Socket>
asio::awaitable<bool> Session<Socket>::drained_to(std::size_t bytes) {
  while (!closed_ && unread() > bytes) {
    drained_.expires_at(Clock::time_point::max());
    asio::error_code ec;
    co_await drained_.async_wait(asio::redirect_error(use_awaitable, ec));
  }
  co_return !closed_;
}

template <typename Socket>
asio::awaitable<void> Session<Socket>::watch_progress() {
  auto self = this->shared_from_this();
  const ServerLimits& limits = context_.limits;
  const auto tick = std::clamp<std::chrono::nanoseconds>(
      std::min(limits.idle_timeout, limits.unread_output_timeout) / 4,
      std::chrono::milliseconds(10), std::chrono::seconds(1));
  for (;;) {
    tick_.expires_after(tick);
    asio::error_code ec;
    co_await tick_.async_wait(asio::redirect_error(use_awaitable, ec));
    if (closed_ || *context_.stopped) co_return;
    const auto now = Clock::now();
    if (unread() > limits.max_unread_output_bytes &&
        now - last_progress_ >= limits.unread_output_timeout) {
      close("the client read none of its " + std::to_string(unread()) +
            " bytes of unread replies for " + seconds_text(now - last_progress_) +
            " (limits: " + std::to_string(limits.max_unread_output_bytes) + " bytes, " +
            seconds_text(limits.unread_output_timeout) + ")");
      co_return;
    }
    if (now - std::max(last_request_, last_progress_) >= limits.idle_timeout) {
      close("idle: no request and no reply read for " +
            seconds_text(now - std::max(last_request_, last_progress_)) + " (idle timeout " +
            seconds_text(limits.idle_timeout) + ")");
      co_return;
    }
  }
}

template <typename Socket>
void Session<Socket>::queue(std::string reply) {
  if (closed_) return;
  if (queued_.empty()) {
    queued_ = std::move(reply);
  } else {
    queued_ += reply;
  }
  write_more();
}

template <typename Socket>
void Session<Socket>::write_more() {
  if (writing_ || closed_) return;
  if (sent_ == sending_.size()) {
    sending_.clear();
    sent_ = 0;
    if (queued_.empty()) {
      if (sending_.capacity() > kKeepCapacityBytes) std::string().swap(sending_);
      if (queued_.capacity() > kKeepCapacityBytes) std::string().swap(queued_);
      return;
    }
    std::swap(sending_, queued_);
  }
  writing_ = true;
  // write_some, not write: progress is seen per chunk the client reads, not per whole reply.
  socket_.async_write_some(
      asio::buffer(sending_.data() + sent_, sending_.size() - sent_),
      [self = this->shared_from_this()](const asio::error_code& ec, std::size_t n) {
        self->writing_ = false;
        if (ec) {
          self->close("");  // the client is gone
          return;
        }
        self->sent_ += n;
        self->last_progress_ = Clock::now();
        self->drained_.cancel();
        self->write_more();
      });
}

template <typename Socket>
void Session<Socket>::close(const std::string& reason) {
  if (closed_) return;
  closed_ = true;
  if (!reason.empty()) {
    // Charged to the peer like its requests' lines: a user who opens and abandons connections
    // cannot flood the log with their closing either.
    const std::string name = "uid " + std::to_string(peer_.uid);
    const log::PeerScope log_scope(peer_.uid, name, !peer_.privileged());
    log::warning("control.connection_closed", {{"peer", peer_.description}, {"reason", reason}});
  }
  asio::error_code ec;
  socket_.close(ec);
  slot_.reset();  // the slot is free now, not when the last handler lets go of the session
  drained_.cancel();
  tick_.cancel();
}

template class Session<asio::local::stream_protocol::socket>;
template class Session<asio::ip::tcp::socket>;

}  // namespace ramguard::control
