#pragma once
// Time as two readings: monotonic for intervals and slopes (immune to clock jumps), wall for
// the ledger and for humans. Components take a Clock so tests can drive time by hand.

#include <chrono>

namespace ramguard {

struct Instant {
  std::chrono::nanoseconds monotonic{0};
  std::chrono::nanoseconds wall{0};  // since the Unix epoch
};

inline double seconds_between(const Instant& from, const Instant& to) {
  return std::chrono::duration<double>(to.monotonic - from.monotonic).count();
}

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Instant now() const = 0;
};

class SystemClock final : public Clock {
 public:
  Instant now() const override {
    return {std::chrono::steady_clock::now().time_since_epoch(),
            std::chrono::system_clock::now().time_since_epoch()};
  }
};

// For tests: time moves only when told to.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(Instant start = {std::chrono::seconds(1000),
                                      std::chrono::seconds(1'700'000'000)})
      : now_(start) {}
  Instant now() const override { return now_; }
  void advance(std::chrono::nanoseconds d) {
    now_.monotonic += d;
    now_.wall += d;
  }
  void jump_wall(std::chrono::nanoseconds d) { now_.wall += d; }

 private:
  Instant now_;
};

}  // namespace ramguard
