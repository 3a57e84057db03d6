#pragma once
// The per-job series of the exporter: created on first use, cached (the periodic path is one
// hash lookup and a few atomic stores), and removed from their families when a finished run's
// job has been retired for the retention period. Label values are bounded here: a client
// inventing phase names cannot grow the series without limit.

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

namespace ramguard {

inline constexpr std::size_t kMaxJobs = 256;
inline constexpr std::size_t kMaxValuesPerLabel = 32;  // distinct phases, gaps, ... per job
inline constexpr std::size_t kMaxLabelValueLength = 64;
inline constexpr const char* kOverflowLabelValue = "other";

struct JobState {
  std::string name;  // the job label value ("other" past kMaxJobs)
  // Hot path: set by every reading.
  prometheus::Gauge* rss = nullptr;
  prometheus::Gauge* anon = nullptr;
  prometheus::Gauge* file = nullptr;
  prometheus::Gauge* shmem = nullptr;
  prometheus::Gauge* last_reading = nullptr;
  std::uint64_t last_shmem_bytes = 0;  // from the last mark reading
  double peak_bytes = -1;
  std::string degraded_reason;
  std::optional<std::chrono::nanoseconds> retired_at;  // monotonic

  struct Series {
    void* metric = nullptr;
    std::function<void()> remove;
  };
  std::map<std::string, Series> series;  // family address + extra labels -> metric
  std::map<std::string, std::set<std::string>, std::less<>> label_values;
};

class JobSeries {
 public:
  // The job's state, created on first use; touching a retired job brings it back.
  JobState& job(std::string_view name);

  // The job's metric in `family` with `extra` labels besides job, created on first use.
  template <typename T>
  T& metric(JobState& job, prometheus::Family<T>& family, const prometheus::Labels& extra = {}) {
    std::string key = series_key(&family, extra);
    auto it = job.series.find(key);
    if (it != job.series.end()) return *static_cast<T*>(it->second.metric);
    prometheus::Labels labels = extra;
    labels["job"] = job.name;
    T* created = &family.Add(labels);
    job.series.emplace(std::move(key),
                       JobState::Series{created, [&family, created] { family.Remove(created); }});
    return *created;
  }

  // Removes one series of the job (e.g. a degraded reason that no longer holds).
  void remove_metric(JobState& job, const void* family, const prometheus::Labels& extra);

  // A label value safe to export: truncated, and folded into "other" past the per-job limit.
  std::string bounded_value(JobState& job, std::string_view label, std::string_view value);

  // The job's run finished at `now`; its series stay until sweep() passes the retention.
  void retire(std::string_view name, std::chrono::nanoseconds now);
  // Removes the series of jobs retired at least `retention` before `now`; returns how many.
  std::size_t sweep(std::chrono::nanoseconds now, std::chrono::nanoseconds retention);
  // Removes the job's series at once.
  void remove(std::string_view name);

  std::size_t job_count() const { return jobs_.size(); }
  bool has_job(std::string_view name) const { return jobs_.find(name) != jobs_.end(); }

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  static std::string series_key(const void* family, const prometheus::Labels& extra);
  static void remove_all(JobState& job);

  std::unordered_map<std::string, JobState, Hash, std::equal_to<>> jobs_;
};

}  // namespace ramguard
