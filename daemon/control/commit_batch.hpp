#pragma once
// Group commit for the control server. Requests served in one turn of the event loop (64
// clients admitting at once: most of them) share one ledger transaction, and each reply waits
// until it is done, so a reply never says "admitted" before the reservation is stored. Alone, a
// request costs one turn more; together, one transaction, one set of file locks and one WAL
// append instead of one each.

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/steady_timer.hpp>
#include <functional>
#include <memory>

namespace ramguard::control {

class CommitBatch {
 public:
  // `write` does the pending writes of every waiter; it runs on the executor.
  CommitBatch(asio::any_io_executor executor, std::function<void()> write);
  ~CommitBatch();
  CommitBatch(const CommitBatch&) = delete;
  CommitBatch& operator=(const CommitBatch&) = delete;

  // Returns once a write that started after this call has finished.
  asio::awaitable<void> wait();
  std::uint64_t writes() const { return state_->writes; }  // batches written so far

 private:
  struct State {
    std::function<void()> write;
    std::shared_ptr<asio::steady_timer> next;  // the waiters of the write not yet started
    std::uint64_t writes = 0;
    bool alive = true;
  };
  asio::any_io_executor executor_;
  std::shared_ptr<State> state_;
};

}  // namespace ramguard::control
