#pragma once
// A token bucket per connection: a client may burst up to one second's worth of requests.

#include <algorithm>
#include <chrono>

namespace ramguard::control {

class RateLimiter {
 public:
  explicit RateLimiter(double per_second)
      : per_second_(per_second), tokens_(per_second), last_(std::chrono::steady_clock::now()) {}

  bool allow() {
    const auto now = std::chrono::steady_clock::now();
    tokens_ = std::min(per_second_,
                       tokens_ + std::chrono::duration<double>(now - last_).count() * per_second_);
    last_ = now;
    if (tokens_ < 1.0) return false;
    tokens_ -= 1.0;
    return true;
  }

 private:
  double per_second_;
  double tokens_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace ramguard::control
