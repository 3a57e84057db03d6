#pragma once
// The daemon-wide series: the budget, the reservations and admission's caps, the runs, the
// users' shares, the ledger's state and the daemon's own cost. Created on first use, so
// nothing is exported before it is known, except those an alert reads from the first scrape.
// Not thread-safe: the exporter hands it out under its lock (metrics/locked.hpp).

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string_view>

#include "metrics/user_shares.hpp"
#include "ramguard/base/result.hpp"

namespace prometheus {
class Counter;
class Gauge;
class Histogram;
}  // namespace prometheus

namespace ramguard {

struct Decision;
struct MetricFamilies;

class DaemonSeries {
 public:
  explicit DaemonSeries(MetricFamilies& families);
  DaemonSeries(const DaemonSeries&) = delete;
  DaemonSeries& operator=(const DaemonSeries&) = delete;

  void set_budget(std::uint64_t budget_bytes, std::uint64_t margin_bytes);
  void set_reserved_bytes(std::uint64_t total_bytes);
  // One admission's caps (0: none) and committed memory; a refusal is counted by the cap that
  // refused it ("budget", "node", "cgroup").
  void observe_decision(const Decision& decision);
  void set_runs_active(std::size_t runs);
  // A run start refused by a cap ("runs" or "user"): ramguard_run_refusals_by_cap_total.
  void observe_run_refusal(std::string_view cap);
  // Each user's share, by UID: the bytes its reservations hold (claimed or not) and its active
  // runs. A user with neither has no series; past kMaxUserSeries users the smallest shares
  // are summed under uid="other", so the series count stays bounded.
  void set_user_reserved_bytes(const std::map<std::uint32_t, std::uint64_t>& by_uid);
  void set_user_active_runs(const std::map<std::uint32_t, std::uint64_t>& by_uid);
  void set_store_available(bool available);
  void set_store_writable(bool writable);
  // The ledger journal's size, bound and drops since the start (a running total).
  void set_store_journal(std::size_t writes, std::size_t max_writes, std::uint64_t dropped_total);

  // The daemon's own cost.
  void observe_sample_duration(double seconds);
  // Own RSS from `proc_self_statm` (normally /proc/self/statm) and jemalloc's statistics when
  // jemalloc is linked. An unreadable file is an Error; the previous values stay.
  Status update_self(const std::filesystem::path& proc_self_statm);

 private:
  MetricFamilies& families_;
  prometheus::Gauge* budget_ = nullptr;
  prometheus::Gauge* margin_ = nullptr;
  prometheus::Gauge* reserved_ = nullptr;
  prometheus::Gauge* caps_[3] = {nullptr, nullptr, nullptr};  // effective, node, cgroup
  prometheus::Gauge* committed_ = nullptr;
  prometheus::Gauge* runs_active_ = nullptr;
  prometheus::Gauge* store_available_ = nullptr;
  prometheus::Gauge* store_writable_ = nullptr;
  prometheus::Gauge* journal_writes_ = nullptr;
  prometheus::Gauge* journal_max_writes_ = nullptr;
  prometheus::Counter* journal_dropped_ = nullptr;
  prometheus::Histogram* sample_duration_ = nullptr;
  prometheus::Gauge* self_rss_ = nullptr;
  prometheus::Gauge* jemalloc_[4] = {nullptr, nullptr, nullptr, nullptr};
  UserShareSeries user_reserved_;
  UserShareSeries user_runs_;
};

}  // namespace ramguard
