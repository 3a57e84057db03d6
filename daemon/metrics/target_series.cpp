#include "metrics/target_series.hpp"

#include <algorithm>

#include "metrics/exposition.hpp"

namespace ramguard {

TargetState& TargetSeries::target(std::string_view key, const Labels& labels) {
  auto it = targets_.find(key);
  if (it != targets_.end()) return it->second;
  const bool folded_before = folded_.find(key) != folded_.end();
  if (folded_before || (targets_.size() >= max_targets_ && !evict_oldest_retired())) {
    // Every target is live: new ones share one bucket rather than growing the scrape.
    if (!folded_before) folded_.emplace(key);
    Labels overflow;
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

std::string TargetSeries::series_labels(const TargetState& target, const Labels& extra) const {
  if (extra.empty()) return exposition::render_labels(target.labels);
  Labels all = extra;
  all.insert(target.labels.begin(), target.labels.end());
  return exposition::render_labels(all);
}

double& TargetSeries::metric(TargetState& target, TargetFamily family, const Labels& extra) {
  auto [it, created] = values(family).try_emplace(series_labels(target, extra), 0.0);
  if (created) target.series.push_back({family, it});
  return it->second;
}

void TargetSeries::remove_metric(TargetState& target, TargetFamily family, const Labels& extra) {
  FamilyValues& family_values = values(family);
  auto it = family_values.find(series_labels(target, extra));
  if (it == family_values.end()) return;
  std::erase_if(target.series, [&](const TargetState::Series& s) { return s.value == it; });
  family_values.erase(it);
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
  for (const auto& s : target.series) values(s.family).erase(s.value);
  target.series.clear();
  target.rss = target.anon = target.file = target.shmem = target.last_reading = nullptr;
  target.peak = target.peak_exact = nullptr;
  if (target.retired_at) --retired_;
}

void TargetSeries::retire(std::string_view key, std::chrono::nanoseconds now) {
  forget_folded(key);
  auto it = targets_.find(key);
  if (it == targets_.end()) return;
  if (!it->second.retired_at) ++retired_;
  it->second.retired_at = now;
}

void TargetSeries::revive(TargetState& target) {
  if (target.retired_at) --retired_;
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
  return removed;
}

void TargetSeries::remove(std::string_view key) {
  auto it = targets_.find(key);
  if (it == targets_.end()) return;
  remove_all(it->second);
  targets_.erase(it);
}

void TargetSeries::write(std::string& out) const {
  for (std::size_t f = 0; f < kTargetFamilyCount; ++f) {
    const TargetFamilyInfo& family = info(static_cast<TargetFamily>(f));
    exposition::append_header(out, family.name, family.help, family.counter ? "counter" : "gauge");
    for (const auto& [labels, value] : values_[f]) {
      exposition::append_sample(out, family.name, labels, value);
    }
  }
}

}  // namespace ramguard
