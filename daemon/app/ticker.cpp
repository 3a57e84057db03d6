#include "app/ticker.hpp"

namespace ramguard {

void AsioTicker::start(std::chrono::nanoseconds period, std::function<void()> tick) {
  period_ = period;
  tick_ = std::move(tick);
  arm();
}

// Re-armed after each tick, so a slow tick delays the next one instead of piling them up.
void AsioTicker::arm() {
  timer_.expires_after(period_);
  timer_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    tick_();
    arm();
  });
}

}  // namespace ramguard
