#pragma once
// One gauge per user (label uid) for a share of the node: bytes reserved, active runs. The
// series count is bounded: the largest kMaxUserSeries shares keep their own series, the rest
// are summed under uid="other"; a user whose share is 0 has no series (Prometheus marks it
// stale rather than keeping a 0 for every UID ever seen).

#include <prometheus/family.h>
#include <prometheus/gauge.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>

namespace ramguard {

inline constexpr std::size_t kMaxUserSeries = 32;

// Which label each UID's share is exported under: its UID for the largest kMaxUserSeries
// shares (ties: the lower UID), "other" (summed) for the rest; zero shares are left out.
std::map<std::string, double> user_share_labels(
    const std::map<std::uint32_t, std::uint64_t>& by_uid, std::size_t max_series = kMaxUserSeries);

class UserShareSeries {
 public:
  explicit UserShareSeries(prometheus::Family<prometheus::Gauge>& family) : family_(family) {}
  UserShareSeries(const UserShareSeries&) = delete;
  UserShareSeries& operator=(const UserShareSeries&) = delete;

  // Replaces every user's value (the caller holds the exporter's lock).
  void set(const std::map<std::uint32_t, std::uint64_t>& by_uid);

 private:
  prometheus::Family<prometheus::Gauge>& family_;
  std::map<std::string, prometheus::Gauge*> live_;  // by uid label
};

}  // namespace ramguard
