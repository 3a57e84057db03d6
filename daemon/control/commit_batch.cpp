#include "control/commit_batch.hpp"

#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>

namespace ramguard::control {

CommitBatch::CommitBatch(asio::any_io_executor executor, std::function<void()> write)
    : executor_(std::move(executor)), state_(std::make_shared<State>()) {
  state_->write = std::move(write);
}

CommitBatch::~CommitBatch() {
  state_->alive = false;
  if (state_->next) state_->next->cancel();  // waiters resume; their sessions are stopping
}

asio::awaitable<void> CommitBatch::wait() {
  if (!state_->next) {
    state_->next =
        std::make_shared<asio::steady_timer>(executor_, asio::steady_timer::time_point::max());
    // Posted: it runs after every handler already ready in this turn, whose requests join.
    asio::post(executor_, [state = state_] {
      auto batch = std::move(state->next);
      state->next.reset();
      if (!state->alive) return;
      state->write();
      ++state->writes;
      batch->cancel();  // the timer is the waiters' event: cancelling it wakes them all
    });
  }
  const std::shared_ptr<asio::steady_timer> batch = state_->next;
  asio::error_code ignored;
  co_await batch->async_wait(asio::redirect_error(asio::use_awaitable, ignored));
}

}  // namespace ramguard::control
