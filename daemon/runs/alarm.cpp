#include "runs/alarm.hpp"

#include <algorithm>
#include <asio/steady_timer.hpp>

namespace ramguard {
namespace {

class AsioAlarm final : public Alarm {
 public:
  AsioAlarm(asio::io_context& io, const Clock& clock) : timer_(io), clock_(clock) {}
  void set(std::chrono::nanoseconds at_monotonic, std::function<void()> due) override {
    // The wait is measured on the component's clock, which is the steady clock in the daemon.
    const auto wait = std::max(at_monotonic - clock_.monotonic(), std::chrono::nanoseconds(0));
    timer_.expires_after(wait);  // cancels the previous wait
    timer_.async_wait([due = std::move(due)](const asio::error_code& ec) {
      if (!ec) due();
    });
  }
  void cancel() override { timer_.cancel(); }

 private:
  asio::steady_timer timer_;  // its destructor cancels the wait
  const Clock& clock_;
};

}  // namespace

std::unique_ptr<Alarm> AsioAlarms::make() {
  return std::make_unique<AsioAlarm>(io_, clock_);
}

}  // namespace ramguard
