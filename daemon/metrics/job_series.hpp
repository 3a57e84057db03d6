#pragma once
// The per-target series of the exporter: created on first use, cached (the periodic path is
// one hash lookup and a few atomic stores), and removed from their families when a finished
// target has been retired for the retention period. A target is a run (labels ramguard_job
// and run_id) or a job's admissions (ramguard_job only). Label values are bounded here: a
// client inventing phase names cannot grow the series without limit.

#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/labels.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace ramguard {

// Active runs (control.max_runs, 256 by default) plus watched PIDs plus the retired targets
// still inside the retention (metrics.max_targets). Past it the oldest retired target is
// dropped early; only when every target is live do new ones fold into "other", and each one
// folded is counted until it retires.
inline constexpr std::size_t kDefaultMaxTargets = 1024;
inline constexpr std::size_t kMaxValuesPerLabel = 32;  // distinct phases, gaps, ... per target
inline constexpr std::size_t kMaxLabelValueLength = 128;
inline constexpr const char* kOverflowLabelValue = "other";
inline constexpr const char* kJobLabel = "ramguard_job";
inline constexpr const char* kRunLabel = "run_id";

struct TargetState {
  prometheus::Labels labels;  // ramguard_job, and run_id for a run
  // Hot path: set by every reading; null while the target has no current reading.
  prometheus::Gauge* rss = nullptr;
  prometheus::Gauge* anon = nullptr;
  prometheus::Gauge* file = nullptr;
  prometheus::Gauge* shmem = nullptr;
  prometheus::Gauge* last_reading = nullptr;
  std::uint64_t last_shmem_bytes = 0;  // from the last mark reading
  double peak_bytes = -1;
  bool state_series = false;  // up, exited, degraded and verdict_active exist
  bool readable = true;
  bool exited = false;
  bool finished = false;  // the run ended: its warnings no longer hold
  std::string degraded_reason;
  std::optional<std::chrono::nanoseconds> retired_at;  // monotonic

  struct Series {
    void* metric = nullptr;
    std::function<void()> remove;
  };
  std::map<std::string, Series> series;  // family address + extra labels -> metric
  std::map<std::string, std::set<std::string>, std::less<>> label_values;
};

class TargetSeries {
 public:
  explicit TargetSeries(std::size_t max_targets = kDefaultMaxTargets) : max_targets_(max_targets) {}
  void set_max_targets(std::size_t max_targets) { max_targets_ = max_targets; }
  std::size_t max_targets() const { return max_targets_; }
  // Live targets sharing the "other" series because the bound was reached.
  std::size_t folded_count() const { return folded_.size(); }
  // A folded target stopped being watched: it no longer counts.
  void forget_folded(std::string_view key);

  // The target's state under `key` (a run id, or "admission:<job>"), created with `labels`
  // on first use.
  TargetState& target(std::string_view key, const prometheus::Labels& labels);
  TargetState* find(std::string_view key);

  // The target's metric in `family` with `extra` labels besides its own, created on first use.
  template <typename T>
  T& metric(TargetState& target, prometheus::Family<T>& family,
            const prometheus::Labels& extra = {}) {
    std::string key = series_key(&family, extra);
    auto it = target.series.find(key);
    if (it != target.series.end()) return *static_cast<T*>(it->second.metric);
    prometheus::Labels labels = extra;
    labels.insert(target.labels.begin(), target.labels.end());
    T* created = &family.Add(labels);
    target.series.emplace(std::move(key), TargetState::Series{created, [&family, created] {
                                                                family.Remove(created);
                                                              }});
    return *created;
  }

  // Removes one series of the target (e.g. a reading gauge once the process is gone).
  void remove_metric(TargetState& target, const void* family, const prometheus::Labels& extra = {});

  // A label value safe to export: truncated, and folded into "other" past the per-target limit.
  std::string bounded_value(TargetState& target, std::string_view label, std::string_view value);

  // The target stopped being watched at `now`; its series stay until sweep() passes the
  // retention.
  void retire(std::string_view key, std::chrono::nanoseconds now);
  // Removes the series of targets retired at least `retention` before `now`; returns how many.
  std::size_t sweep(std::chrono::nanoseconds now, std::chrono::nanoseconds retention);
  // Removes the target's series at once.
  void remove(std::string_view key);

  std::size_t target_count() const { return targets_.size(); }
  bool has_target(std::string_view key) const { return targets_.find(key) != targets_.end(); }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  static std::string series_key(const void* family, const prometheus::Labels& extra);
  static void remove_all(TargetState& target);
  bool evict_oldest_retired();

  std::size_t max_targets_;
  std::unordered_map<std::string, TargetState, Hash, std::equal_to<>> targets_;
  std::unordered_set<std::string, Hash, std::equal_to<>> folded_;
};

}  // namespace ramguard
