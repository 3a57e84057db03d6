#pragma once
// The timer seam for periodic work: a component asks to be called every period and decides
// what is due from its Clock. The daemon's ticker is an asio timer; tests fire a manual one
// after moving a FakeClock, so nothing periodic waits on real time in a test.

#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <functional>

namespace ramguard {

class Ticker {
 public:
  virtual ~Ticker() = default;
  // Calls `tick` every `period` until stop(); a second start() replaces the first.
  virtual void start(std::chrono::nanoseconds period, std::function<void()> tick) = 0;
  virtual void stop() = 0;
};

class AsioTicker final : public Ticker {
 public:
  explicit AsioTicker(asio::io_context& io) : timer_(io) {}
  void start(std::chrono::nanoseconds period, std::function<void()> tick) override;
  void stop() override { timer_.cancel(); }

 private:
  void arm();
  asio::steady_timer timer_;
  std::chrono::nanoseconds period_{0};
  std::function<void()> tick_;
};

}  // namespace ramguard
