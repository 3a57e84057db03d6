#pragma once
// Time as two readings: monotonic for intervals and slopes (immune to clock jumps), wall for
// the ledger and for humans. Components take a Clock so tests can drive time by hand.

#include <chrono>
#include <cstdint>

namespace ramguard {

struct Instant {
  std::chrono::nanoseconds monotonic{0};
  std::chrono::nanoseconds wall{0};  // since the Unix epoch
};

// Whole milliseconds: how the ledger, the protocol and reservations write times and leases.
inline std::int64_t whole_ms(std::chrono::nanoseconds d) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
}
inline std::int64_t unix_ms(const Instant& at) {
  return whole_ms(at.wall);
}

inline double seconds_between(const Instant& from, const Instant& to) {
  return std::chrono::duration<double>(to.monotonic - from.monotonic).count();
}

class Clock {
 public:
  virtual ~Clock() = default;
  virtual Instant now() const = 0;
  // now().monotonic alone: how the sampler times its reads (one clock read instead of two).
  virtual std::chrono::nanoseconds monotonic() const { return now().monotonic; }
};

class SystemClock final : public Clock {
 public:
  Instant now() const override {
    return {std::chrono::steady_clock::now().time_since_epoch(),
            std::chrono::system_clock::now().time_since_epoch()};
  }
  std::chrono::nanoseconds monotonic() const override {
    return std::chrono::steady_clock::now().time_since_epoch();
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

 private:
  Instant now_;
};

}  // namespace ramguard
