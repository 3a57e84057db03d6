#include "control/commit_batch.hpp"

#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>

namespace ramguard::control {

CommitBatch::CommitBatch(asio::any_io_executor executor, std::function<bool()> write)
    : executor_(std::move(executor)), state_(std::make_shared<State>()) {
  state_->write = std::move(write);
}

CommitBatch::~CommitBatch() {
  state_->alive = false;
  if (state_->next) {
    state_->next->ok = false;  // never written: the waiters' sessions are stopping anyway
    state_->next->timer.cancel();
  }
}

void CommitBatch::schedule() {
  if (state_->next) return;
  state_->next = std::make_shared<Pending>(executor_);
  // Posted: it runs after every handler already ready in this turn, whose requests join.
  asio::post(executor_, [state = state_] {
    auto batch = std::move(state->next);
    state->next.reset();
    if (!state->alive) return;
    batch->ok = state->write();
    ++state->writes;
    batch->timer.cancel();
  });
}

asio::awaitable<bool> CommitBatch::wait() {
  schedule();
  // Held: the result is read after the write, when state_->next may be another batch.
  const std::shared_ptr<Pending> batch = state_->next;
  asio::error_code ignored;
  co_await batch->timer.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  co_return batch->ok;
}

}  // namespace ramguard::control
