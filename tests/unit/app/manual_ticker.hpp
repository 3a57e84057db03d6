#pragma once
// A ticker that ticks only when the test says so, after moving a FakeClock.

#include <functional>

#include "app/ticker.hpp"

namespace ramguard::test {

class ManualTicker final : public Ticker {
 public:
  void start(std::chrono::nanoseconds period, std::function<void()> tick) override {
    period_ = period;
    tick_ = std::move(tick);
  }
  void stop() override { tick_ = nullptr; }
  bool running() const { return tick_ != nullptr; }
  std::chrono::nanoseconds period() const { return period_; }
  void fire() {
    if (tick_) tick_();
  }

 private:
  std::chrono::nanoseconds period_{0};
  std::function<void()> tick_;
};

}  // namespace ramguard::test
