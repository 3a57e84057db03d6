#pragma once
// The timer seam for one-shot deadlines (a run's settle window, its release checks): a
// component sets an alarm for a time on its Clock and is called once when that time comes. The
// daemon's alarms are asio timers; tests fire manual ones after moving a FakeClock
// (tests/unit/runs/manual_alarms.hpp), so no deadline waits on real time in a test. The
// periodic twin is app/ticker.hpp's Ticker.

#include <asio/io_context.hpp>
#include <chrono>
#include <functional>
#include <memory>

#include "common/clock.hpp"

namespace ramguard {

class Alarm {
 public:
  virtual ~Alarm() = default;  // cancels: `due` never runs after the alarm is gone
  // Calls `due` once, on the loop, when the clock's monotonic time reaches `at_monotonic` (at
  // once, in a later turn, when it already has); a second set() replaces the first.
  virtual void set(std::chrono::nanoseconds at_monotonic, std::function<void()> due) = 0;
  virtual void cancel() = 0;
};

// Makes the alarms: one per thing that has a deadline of its own.
class Alarms {
 public:
  virtual ~Alarms() = default;
  virtual std::unique_ptr<Alarm> make() = 0;
};

class AsioAlarms final : public Alarms {
 public:
  AsioAlarms(asio::io_context& io, const Clock& clock) : io_(io), clock_(clock) {}
  std::unique_ptr<Alarm> make() override;

 private:
  asio::io_context& io_;
  const Clock& clock_;
};

}  // namespace ramguard
