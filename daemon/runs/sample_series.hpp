#pragma once
// Bounded per-run sample memory: the guard must never be the leak. Readings of the last
// `recent_window` are kept at full resolution (at most `max_recent` of them); older ones are
// folded into buckets of `bucket_width` holding min/max/last RSS and the last anon/file split.
// When there are more than `max_buckets` buckets, adjacent pairs merge and the width doubles,
// so a run of any length costs at most capacity_bytes() (155,760 bytes with the defaults: a
// month of 2 s samples ends up in ~675 buckets of 64 min).

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "model/reading.hpp"

namespace ramguard {

struct SeriesPoint {
  Instant first;  // first reading folded in (== last for a full-resolution point)
  Instant last;
  std::uint64_t rss_min_bytes = 0;
  std::uint64_t rss_max_bytes = 0;
  std::uint64_t rss_last_bytes = 0;
  std::uint64_t anon_last_bytes = 0;
  std::uint64_t file_last_bytes = 0;
  std::uint32_t count = 0;  // readings folded in
  bool folded = false;      // false: one reading at full resolution
};

struct SeriesLimits {
  std::chrono::nanoseconds recent_window = std::chrono::minutes(10);
  std::size_t max_recent = 1024;  // readings; a faster sampler folds earlier
  std::chrono::nanoseconds bucket_width = std::chrono::minutes(1);
  std::size_t max_buckets = 1024;
};

class SampleSeries {
 public:
  explicit SampleSeries(SeriesLimits limits = {});

  // Readings should come in monotonic order; an older one is folded into the latest bucket
  // (or kept) without breaking the order of points().
  void add(const MemoryReading& reading);

  // Buckets (oldest first) then the recent readings as single points.
  std::vector<SeriesPoint> points() const;
  // Lowest RSS over [from, to] (monotonic). Buckets overlapping the range count with their
  // minimum, so the answer may come from just outside the range once folded.
  std::optional<std::uint64_t> min_rss_between(const Instant& from, const Instant& to) const;
  std::optional<std::uint64_t> max_rss_between(const Instant& from, const Instant& to) const;
  // Full-resolution readings at or after `since`, oldest first (those still in the window).
  std::vector<MemoryReading> readings_since(const Instant& since) const;
  std::optional<MemoryReading> latest() const;

  std::size_t recent_size() const { return recent_count_; }
  std::size_t bucket_count() const { return buckets_.size(); }
  std::chrono::nanoseconds current_bucket_width() const { return width_; }
  std::uint64_t total_readings() const { return total_; }

  // The stated bound on this object's memory, whatever the run length.
  std::size_t capacity_bytes() const;
  // What it holds now (allocated capacity included); always <= capacity_bytes().
  std::size_t memory_bytes() const;

 private:
  const MemoryReading& recent_at(std::size_t i) const;  // 0 = oldest
  void push_recent(const MemoryReading& r);
  void pop_oldest_into_bucket();
  void fold(const MemoryReading& r);
  void merge_buckets();

  SeriesLimits limits_;
  std::vector<MemoryReading> ring_;  // grows to max_recent, then wraps
  std::size_t head_ = 0;             // index of the oldest reading
  std::size_t recent_count_ = 0;
  std::vector<SeriesPoint> buckets_;
  std::chrono::nanoseconds width_;
  std::uint64_t total_ = 0;
};

}  // namespace ramguard
