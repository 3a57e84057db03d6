#include "metrics/user_shares.hpp"

#include <algorithm>
#include <utility>
#include <vector>

#include "metrics/target_series.hpp"

namespace ramguard {

std::map<std::string, double> user_share_labels(
    const std::map<std::uint32_t, std::uint64_t>& by_uid, std::size_t max_series) {
  std::vector<std::pair<std::uint64_t, std::uint32_t>> shares;  // (value, uid)
  for (const auto& [uid, value] : by_uid) {
    if (value > 0) shares.emplace_back(value, uid);
  }
  // Largest first; the lower UID among equals, so the labels do not flap between scrapes.
  std::sort(shares.begin(), shares.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::map<std::string, double> out;
  for (std::size_t i = 0; i < shares.size(); ++i) {
    const std::string label =
        i < max_series ? std::to_string(shares[i].second) : std::string(kOverflowLabelValue);
    out[label] += static_cast<double>(shares[i].first);
  }
  return out;
}

void UserShareSeries::set(const std::map<std::uint32_t, std::uint64_t>& by_uid) {
  const std::map<std::string, double> values = user_share_labels(by_uid);
  for (auto it = live_.begin(); it != live_.end();) {
    if (values.count(it->first) == 0) {
      family_.Remove(it->second);
      it = live_.erase(it);
    } else {
      ++it;
    }
  }
  for (const auto& [label, value] : values) {
    prometheus::Gauge*& gauge = live_[label];
    if (gauge == nullptr) gauge = &family_.Add({{"uid", label}});
    gauge->Set(value);
  }
}

}  // namespace ramguard
