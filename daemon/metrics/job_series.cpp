#include "metrics/job_series.hpp"

#include <cstdint>
#include <iterator>

namespace ramguard {

TargetState& TargetSeries::target(std::string_view key, const prometheus::Labels& labels) {
  auto it = targets_.find(key);
  if (it != targets_.end()) return it->second;
  const bool folded_before = folded_.find(key) != folded_.end();
  if (folded_before || (targets_.size() >= max_targets_ && !evict_oldest_retired())) {
    // Every target is live: new ones share one bucket rather than growing the scrape.
    if (!folded_before) folded_.emplace(key);
    prometheus::Labels overflow;
    for (const auto& [name, value] : labels) overflow[name] = kOverflowLabelValue;
    key = kOverflowLabelValue;
    it = targets_.find(key);
    if (it != targets_.end()) return it->second;
    it = targets_.try_emplace(std::string(key)).first;
    it->second.labels = std::move(overflow);
    return it->second;
  }
  it = targets_.try_emplace(std::string(key)).first;
  for (const auto& [name, value] : labels) {
    it->second.labels[name] = value.substr(0, kMaxLabelValueLength);
  }
  return it->second;
}

void TargetSeries::forget_folded(std::string_view key) {
  auto it = folded_.find(key);
  if (it != folded_.end()) folded_.erase(it);
}

TargetState* TargetSeries::find(std::string_view key) {
  auto it = targets_.find(key);
  return it == targets_.end() ? nullptr : &it->second;
}

bool TargetSeries::evict_oldest_retired() {
  auto oldest = targets_.end();
  for (auto it = targets_.begin(); it != targets_.end(); ++it) {
    if (it->second.retired_at &&
        (oldest == targets_.end() || *it->second.retired_at < *oldest->second.retired_at)) {
      oldest = it;
    }
  }
  if (oldest == targets_.end()) return false;
  remove_all(oldest->second);
  targets_.erase(oldest);
  return true;
}

std::string TargetSeries::series_key(const void* family, const prometheus::Labels& extra) {
  std::string key = std::to_string(reinterpret_cast<std::uintptr_t>(family));
  for (const auto& [name, value] : extra) {
    key += '\x1f';
    key += name;
    key += '=';
    key += value;
  }
  return key;
}

void TargetSeries::remove_metric(TargetState& target, const void* family,
                                 const prometheus::Labels& extra) {
  auto it = target.series.find(series_key(family, extra));
  if (it == target.series.end()) return;
  it->second.remove();
  target.series.erase(it);
}

std::string TargetSeries::bounded_value(TargetState& target, std::string_view label,
                                        std::string_view value) {
  std::string bounded(value.substr(0, kMaxLabelValueLength));
  auto it = target.label_values.find(label);
  if (it == target.label_values.end()) {
    it = target.label_values.try_emplace(std::string(label)).first;
  }
  auto& seen = it->second;
  if (seen.count(bounded) != 0) return bounded;
  if (seen.size() >= kMaxValuesPerLabel) return kOverflowLabelValue;
  seen.insert(bounded);
  return bounded;
}

void TargetSeries::remove_all(TargetState& target) {
  for (auto& [key, series] : target.series) series.remove();
  target.series.clear();
}

void TargetSeries::retire(std::string_view key, std::chrono::nanoseconds now) {
  forget_folded(key);
  auto it = targets_.find(key);
  if (it != targets_.end()) it->second.retired_at = now;
}

std::size_t TargetSeries::sweep(std::chrono::nanoseconds now, std::chrono::nanoseconds retention) {
  std::size_t removed = 0;
  for (auto it = targets_.begin(); it != targets_.end();) {
    const auto& retired = it->second.retired_at;
    if (retired && now - *retired >= retention) {
      remove_all(it->second);
      it = targets_.erase(it);
      ++removed;
    } else {
      ++it;
    }
  }
  return removed;
}

void TargetSeries::remove(std::string_view key) {
  auto it = targets_.find(key);
  if (it == targets_.end()) return;
  remove_all(it->second);
  targets_.erase(it);
}

}  // namespace ramguard
