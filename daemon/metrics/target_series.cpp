#include "metrics/target_series.hpp"

#include <algorithm>
#include <optional>

#include "metrics/exposition.hpp"
#include "metrics/target_scrape.hpp"

namespace ramguard {
namespace {

constexpr std::array<HotSeriesInfo, kHotSeriesCount> kHot = {{
    {TargetFamily::kRssBytes, nullptr, nullptr, false, ""},
    {TargetFamily::kMemoryBytes, "kind", "anon", true, "kind=\"anon\","},
    {TargetFamily::kMemoryBytes, "kind", "file", true, "kind=\"file\","},
    {TargetFamily::kMemoryBytes, "kind", "shmem", true, "kind=\"shmem\","},
    {TargetFamily::kMemoryBytes, "kind", "kernel", true, "kind=\"kernel\","},
    {TargetFamily::kSwapBytes, nullptr, nullptr, false, ""},
    {TargetFamily::kCountedBytes, nullptr, nullptr, false, ""},
    {TargetFamily::kLastReadingTimestampSeconds, nullptr, nullptr, false, ""},
    {TargetFamily::kPeakBytes, nullptr, nullptr, false, ""},
    {TargetFamily::kPeakExact, nullptr, nullptr, false, ""},
    {TargetFamily::kUp, nullptr, nullptr, false, ""},
    {TargetFamily::kExited, nullptr, nullptr, false, ""},
    {TargetFamily::kDegraded, "reason", "unreadable", false, ",reason=\"unreadable\""},
    {TargetFamily::kDegraded, "reason", "hwm_reset_denied", false, ",reason=\"hwm_reset_denied\""},
    {TargetFamily::kReadSeconds, nullptr, nullptr, false, ""},
    {TargetFamily::kSlowReadsTotal, nullptr, nullptr, false, ""},
}};

std::optional<std::size_t> hot_slot(TargetFamily family, const Labels& extra) {
  if (extra.size() > 1) return std::nullopt;
  for (std::size_t i = 0; i < kHot.size(); ++i) {
    const HotSeriesInfo& h = kHot[i];
    if (h.family != family) continue;
    if (h.label == nullptr ? extra.empty()
                           : (!extra.empty() && extra.begin()->first == h.label &&
                              extra.begin()->second == h.value)) {
      return i;
    }
  }
  return std::nullopt;
}

std::uint16_t bit(std::size_t slot) {
  return static_cast<std::uint16_t>(1u << slot);
}

void set_label_parts(TargetState& t) {
  t.job_labels.clear();
  t.run_labels.clear();
  for (const auto& [name, value] : t.labels) {
    (name == kRunLabel ? t.run_labels : t.job_labels) = exposition::render_labels({{name, value}});
  }
}

}  // namespace

const HotSeriesInfo& hot_series_info(std::size_t slot) {
  return kHot[slot];
}

std::size_t TargetSeries::live_targets_of(std::uint32_t uid) const {
  auto it = live_by_owner_.find(uid);
  return it == live_by_owner_.end() ? 0 : it->second;
}

// Root is not capped (as admission's per-user caps): the node's own runs always keep theirs.
bool TargetSeries::owner_full(std::uint32_t owner_uid) const {
  return owner_uid != 0 && max_targets_per_user_ != 0 &&
         live_targets_of(owner_uid) >= max_targets_per_user_;
}

void TargetSeries::count_live(const TargetState& target, int delta) {
  if (target.owner_uid == 0) return;
  std::size_t& n = live_by_owner_[target.owner_uid];
  n = delta > 0 ? n + 1 : (n > 0 ? n - 1 : 0);
  if (n == 0) live_by_owner_.erase(target.owner_uid);
}

TargetState& TargetSeries::target(std::string_view key, const Labels& labels,
                                  std::uint32_t owner_uid) {
  auto it = targets_.find(key);
  if (it != targets_.end()) return it->second;
  const bool folded_before = folded_.find(key) != folded_.end();
  if (folded_before || owner_full(owner_uid) ||
      (targets_.size() >= max_targets_ && !evict_oldest_retired())) {
    // Every target is live, or its owner holds its share: new ones share one bucket rather
    // than growing the scrape.
    if (!folded_before) folded_.emplace(key);
    Labels overflow;
    for (const auto& [name, value] : labels) overflow[name] = kOverflowLabelValue;
    key = kOverflowLabelValue;
    it = targets_.find(key);
    if (it != targets_.end()) return it->second;
    it = targets_.try_emplace(std::string(key)).first;
    index_added(it->first, it->second);
    it->second.labels = std::move(overflow);
    set_label_parts(it->second);
    return it->second;
  }
  it = targets_.try_emplace(std::string(key)).first;
  index_added(it->first, it->second);
  it->second.owner_uid = owner_uid;
  count_live(it->second, +1);
  for (const auto& [name, value] : labels) {
    it->second.labels[name] = value.substr(0, kMaxLabelValueLength);
  }
  set_label_parts(it->second);
  return it->second;
}

void TargetSeries::forget_folded(std::string_view key) {
  auto it = folded_.find(key);
  if (it != folded_.end()) folded_.erase(it);
}

TargetState* TargetSeries::find(std::string_view key) {
  if (index_.empty()) return nullptr;
  const std::size_t hash = Hash{}(key);
  const std::size_t mask = index_.size() - 1;
  for (std::size_t i = hash & mask;; i = (i + 1) & mask) {  // ends: at most half full
    const IndexSlot& slot = index_[i];
    if (slot.state == nullptr) return nullptr;
    if (slot.hash == hash && *slot.key == key) return slot.state;
  }
}

void TargetSeries::rebuild_index() {
  std::size_t size = 16;
  while (size < 2 * targets_.size()) size *= 2;
  index_.assign(size, IndexSlot{});
  for (auto& [key, state] : targets_) index_place(key, state);
}

void TargetSeries::index_added(const std::string& key, TargetState& state) {
  if (2 * targets_.size() > index_.size()) {
    rebuild_index();  // doubles: insertions cost O(1) on average
  } else {
    index_place(key, state);
  }
}

void TargetSeries::index_place(const std::string& key, TargetState& state) {
  const std::size_t hash = Hash{}(key);
  const std::size_t mask = index_.size() - 1;
  std::size_t i = hash & mask;
  while (index_[i].state != nullptr) i = (i + 1) & mask;
  index_[i] = IndexSlot{hash, &key, &state};
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
  rebuild_index();
  return true;
}

std::string TargetSeries::series_labels(const TargetState& target, const Labels& extra) const {
  if (extra.empty()) return exposition::render_labels(target.labels);
  Labels all = extra;
  all.insert(target.labels.begin(), target.labels.end());
  return exposition::render_labels(all);
}

double& TargetSeries::hot(TargetState& target, HotSeries series) {
  const auto slot = static_cast<std::size_t>(series);
  if ((target.hot_present & bit(slot)) == 0) {
    target.hot_present |= bit(slot);
    target.hot[slot] = 0;
  }
  return target.hot[slot];
}

double& TargetSeries::metric(TargetState& target, TargetFamily family, const Labels& extra) {
  if (const auto slot = hot_slot(family, extra)) return hot(target, static_cast<HotSeries>(*slot));
  std::string labels = series_labels(target, extra);
  for (TargetState::Series& s : target.series) {
    if (s.family == family && s.labels == labels) return s.value;
  }
  return target.series.push_back({family, std::move(labels), 0.0}), target.series.back().value;
}

void TargetSeries::remove_metric(TargetState& target, TargetFamily family, const Labels& extra) {
  if (const auto slot = hot_slot(family, extra)) {
    target.hot_present &= static_cast<std::uint16_t>(~bit(*slot));
    return;
  }
  const std::string labels = series_labels(target, extra);
  std::erase_if(target.series, [&](const TargetState::Series& s) {
    return s.family == family && s.labels == labels;
  });
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
  target.hot_present = 0;
  target.series.clear();
  if (target.retired_at) {
    --retired_;
  } else {
    count_live(target, -1);
  }
}

void TargetSeries::retire(std::string_view key, std::chrono::nanoseconds now) {
  forget_folded(key);
  auto it = targets_.find(key);
  if (it == targets_.end()) return;
  if (!it->second.retired_at) {
    ++retired_;
    count_live(it->second, -1);
  }
  it->second.retired_at = now;
}

void TargetSeries::revive(TargetState& target) {
  if (target.retired_at) {
    --retired_;
    count_live(target, +1);
  }
  target.retired_at.reset();
}

std::size_t TargetSeries::sweep(std::chrono::nanoseconds now, std::chrono::nanoseconds retention) {
  if (retired_ == 0) return 0;  // the common case, once a second
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
  if (removed != 0) rebuild_index();
  return removed;
}

void TargetSeries::remove(std::string_view key) {
  auto it = targets_.find(key);
  if (it == targets_.end()) return;
  remove_all(it->second);
  targets_.erase(it);
  rebuild_index();
}

void TargetSeries::copy_to(TargetScrape& scrape) const {
  scrape.clear();
  for (const auto& [key, t] : targets_) scrape.add(t);
}

}  // namespace ramguard
