#pragma once
// Which targets have series and for how long: the store of every run's, watched PID's and
// job's series (TargetSeries), its bounds (metrics.max_targets, metrics.max_targets_per_user)
// and the targets folded past them (counted, logged, exported), the retention of retired
// targets, and how their job is labelled (metrics.job_names). TargetMetrics and JobSeries
// keep their series here. Not thread-safe: the exporter hands it out under its lock.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/clock.hpp"
#include "config/config.hpp"
#include "metrics/target_series.hpp"

namespace prometheus {
class Gauge;
}  // namespace prometheus

namespace ramguard {

struct MetricFamilies;
class TargetScrape;

inline constexpr std::chrono::nanoseconds kDefaultMetricsRetention = std::chrono::minutes(15);

class TargetTable {
 public:
  explicit TargetTable(MetricFamilies& families);
  TargetTable(const TargetTable&) = delete;
  TargetTable& operator=(const TargetTable&) = delete;

  // Targets with series of their own (metrics.max_targets); new ones past it fold into "other".
  void set_max_targets(std::size_t max_targets);
  // metrics.max_targets_per_user: live targets one UID other than root may hold (0: no cap).
  void set_max_targets_per_user(std::size_t max_targets);
  // metrics.job_names: series made from now on label their job so (plain, hash or omit).
  void set_job_names(JobNames job_names) { job_names_ = job_names; }
  JobNames job_names() const { return job_names_; }
  // Retention of retired targets' series.
  void set_retention(std::chrono::nanoseconds retention) { retention_ = retention; }

  // The target's state under `key`, created with `labels` on first use; past the bounds the
  // shared "other" state, each fold counted in ramguard_metrics_targets_folded and logged.
  TargetState& entry(std::string_view key, const Labels& labels, std::uint32_t owner_uid);
  // A job's key: its admissions and runs' history are one target of their own.
  static std::string job_key(std::string_view job);
  TargetSeries& series() { return series_; }
  // A target folded into "other" stopped being watched: it no longer counts.
  void forget_folded(std::string_view key);

  std::size_t sweep(Instant now);  // returns the number of targets whose series were removed
  bool has_target(std::string_view run_id) const { return series_.has_target(run_id); }
  // Copies every target's series for one scrape.
  void copy_to(TargetScrape& scrape) const { series_.copy_to(scrape); }

 private:
  TargetSeries series_;
  prometheus::Gauge& max_targets_;
  prometheus::Gauge& targets_folded_;
  std::chrono::nanoseconds retention_ = kDefaultMetricsRetention;
  JobNames job_names_ = JobNames::kPlain;
};

}  // namespace ramguard
