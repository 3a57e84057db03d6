#include "runs/sample_series.hpp"

#include <algorithm>

namespace ramguard {

SampleSeries::SampleSeries(SeriesLimits limits) : limits_(limits), width_(limits.bucket_width) {
  limits_.max_recent = std::max<std::size_t>(limits_.max_recent, 1);
  limits_.max_buckets = std::max<std::size_t>(limits_.max_buckets, 2);
  if (width_.count() <= 0) width_ = std::chrono::seconds(1);
}

const MemoryReading& SampleSeries::recent_at(std::size_t i) const {
  return ring_[(head_ + i) % ring_.size()];
}

void SampleSeries::add(const MemoryReading& r) {
  ++total_;
  if (recent_count_ > 0) {
    const MemoryReading& newest = recent_at(recent_count_ - 1);
    if (r.at.monotonic < newest.at.monotonic) {
      // Out of order (a late mark reading): folding keeps points() sorted and min/max intact.
      fold(r);
      return;
    }
  }
  if (recent_count_ == limits_.max_recent) pop_oldest_into_bucket();
  push_recent(r);
  while (recent_count_ > 1 && r.at.monotonic - recent_at(0).at.monotonic > limits_.recent_window) {
    pop_oldest_into_bucket();
  }
}

void SampleSeries::push_recent(const MemoryReading& r) {
  if (ring_.size() < limits_.max_recent && recent_count_ == ring_.size()) {
    // Grow by doubling up to the cap, relinearizing so head_ is 0 again.
    std::vector<MemoryReading> grown;
    grown.reserve(std::min(limits_.max_recent, std::max<std::size_t>(16, ring_.size() * 2)));
    for (std::size_t i = 0; i < recent_count_; ++i) grown.push_back(recent_at(i));
    grown.resize(grown.capacity());
    ring_ = std::move(grown);
    head_ = 0;
  }
  ring_[(head_ + recent_count_) % ring_.size()] = r;
  ++recent_count_;
}

void SampleSeries::pop_oldest_into_bucket() {
  fold(recent_at(0));
  head_ = (head_ + 1) % ring_.size();
  --recent_count_;
}

void SampleSeries::fold(const MemoryReading& r) {
  const bool fits =
      !buckets_.empty() && (r.at.monotonic < buckets_.back().first.monotonic + width_ ||
                            r.at.monotonic < buckets_.back().last.monotonic);
  if (fits) {
    SeriesPoint& b = buckets_.back();
    b.rss_min_bytes = std::min(b.rss_min_bytes, r.rss_bytes);
    b.rss_max_bytes = std::max(b.rss_max_bytes, r.rss_bytes);
    if (r.at.monotonic >= b.last.monotonic) {
      b.last = r.at;
      b.rss_last_bytes = r.rss_bytes;
      b.anon_last_bytes = r.anon_bytes;
      b.file_last_bytes = r.file_bytes;
    }
    if (r.at.monotonic < b.first.monotonic) b.first = r.at;
    ++b.count;
    return;
  }
  if (buckets_.size() == limits_.max_buckets) merge_buckets();
  if (buckets_.capacity() == 0) buckets_.reserve(limits_.max_buckets);
  buckets_.push_back(
      {r.at, r.at, r.rss_bytes, r.rss_bytes, r.rss_bytes, r.anon_bytes, r.file_bytes, 1, true});
}

void SampleSeries::merge_buckets() {
  std::size_t out = 0;
  for (std::size_t i = 0; i < buckets_.size(); i += 2, ++out) {
    SeriesPoint merged = buckets_[i];
    if (i + 1 < buckets_.size()) {
      const SeriesPoint& b = buckets_[i + 1];
      merged.last = b.last;
      merged.rss_min_bytes = std::min(merged.rss_min_bytes, b.rss_min_bytes);
      merged.rss_max_bytes = std::max(merged.rss_max_bytes, b.rss_max_bytes);
      merged.rss_last_bytes = b.rss_last_bytes;
      merged.anon_last_bytes = b.anon_last_bytes;
      merged.file_last_bytes = b.file_last_bytes;
      merged.count += b.count;
    }
    buckets_[out] = merged;
  }
  buckets_.resize(out);
  width_ *= 2;
}

std::vector<SeriesPoint> SampleSeries::points() const {
  std::vector<SeriesPoint> out(buckets_.begin(), buckets_.end());
  out.reserve(buckets_.size() + recent_count_);
  for (std::size_t i = 0; i < recent_count_; ++i) {
    const MemoryReading& r = recent_at(i);
    out.push_back(
        {r.at, r.at, r.rss_bytes, r.rss_bytes, r.rss_bytes, r.anon_bytes, r.file_bytes, 1, false});
  }
  return out;
}

std::optional<std::uint64_t> SampleSeries::min_rss_between(const Instant& from,
                                                           const Instant& to) const {
  std::optional<std::uint64_t> best;
  for (const auto& b : buckets_) {
    if (b.last.monotonic < from.monotonic || b.first.monotonic > to.monotonic) continue;
    best = std::min(best.value_or(b.rss_min_bytes), b.rss_min_bytes);
  }
  for (std::size_t i = 0; i < recent_count_; ++i) {
    const MemoryReading& r = recent_at(i);
    if (r.at.monotonic < from.monotonic || r.at.monotonic > to.monotonic) continue;
    best = std::min(best.value_or(r.rss_bytes), r.rss_bytes);
  }
  return best;
}

std::optional<std::uint64_t> SampleSeries::max_rss_between(const Instant& from,
                                                           const Instant& to) const {
  std::optional<std::uint64_t> best;
  for (const auto& b : buckets_) {
    if (b.last.monotonic < from.monotonic || b.first.monotonic > to.monotonic) continue;
    best = std::max(best.value_or(b.rss_max_bytes), b.rss_max_bytes);
  }
  for (std::size_t i = 0; i < recent_count_; ++i) {
    const MemoryReading& r = recent_at(i);
    if (r.at.monotonic < from.monotonic || r.at.monotonic > to.monotonic) continue;
    best = std::max(best.value_or(r.rss_bytes), r.rss_bytes);
  }
  return best;
}

std::vector<MemoryReading> SampleSeries::readings_since(const Instant& since) const {
  std::vector<MemoryReading> out;
  for (std::size_t i = 0; i < recent_count_; ++i) {
    if (recent_at(i).at.monotonic >= since.monotonic) out.push_back(recent_at(i));
  }
  return out;
}

std::optional<MemoryReading> SampleSeries::latest() const {
  if (recent_count_ == 0) return std::nullopt;
  return recent_at(recent_count_ - 1);
}

std::size_t SampleSeries::capacity_bytes() const {
  return sizeof(SampleSeries) + limits_.max_recent * sizeof(MemoryReading) +
         limits_.max_buckets * sizeof(SeriesPoint);
}

std::size_t SampleSeries::memory_bytes() const {
  return sizeof(SampleSeries) + ring_.capacity() * sizeof(MemoryReading) +
         buckets_.capacity() * sizeof(SeriesPoint);
}

}  // namespace ramguard
