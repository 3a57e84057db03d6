#pragma once
// Group commit for the control server. Requests served in one turn of the event loop (64
// clients admitting or marking at once: most of them) share one ledger transaction, and each
// reply waits until it is done, so a reply never says "admitted" or "stored" before its record
// is durable. Alone, a request costs one turn more; together, one transaction, one set of file
// locks and one WAL append instead of one each.

#include <asio/any_io_executor.hpp>
#include <asio/awaitable.hpp>
#include <asio/steady_timer.hpp>
#include <cstdint>
#include <functional>
#include <memory>

namespace ramguard::control {

class CommitBatch {
 public:
  // `write` does the pending writes of every waiter and says whether they are all durable; it
  // runs on the executor.
  CommitBatch(asio::any_io_executor executor, std::function<bool()> write);
  ~CommitBatch();
  CommitBatch(const CommitBatch&) = delete;
  CommitBatch& operator=(const CommitBatch&) = delete;

  // Returns once a write that started after this call has finished: true when it succeeded.
  asio::awaitable<bool> wait();
  // Makes sure a write runs at the end of this turn even if nobody waits for it (writes no
  // request made: progress samples, exits).
  void schedule();
  std::uint64_t writes() const { return state_->writes; }  // batches written so far

 private:
  struct Pending {
    explicit Pending(const asio::any_io_executor& executor)
        : timer(executor, asio::steady_timer::time_point::max()) {}
    asio::steady_timer timer;  // the waiters' event: cancelling it wakes them all
    bool ok = true;
  };
  struct State {
    std::function<bool()> write;
    std::shared_ptr<Pending> next;  // the waiters of the write not yet started
    std::uint64_t writes = 0;
    bool alive = true;
  };
  asio::any_io_executor executor_;
  std::shared_ptr<State> state_;
};

}  // namespace ramguard::control
