#pragma once
// The per-target series of the exporter, kept as plain values inside each target's state and
// written straight into the text exposition at each scrape: one hash lookup and a few stores
// on the periodic path, one pass over the values per scrape. The fifteen series every watched
// process has live inline in its state (no allocation, one or two cache lines per reading);
// the rest (phases, verdicts, gaps, ...) in a small vector with their rendered labels. A target
// is a run (labels ramguard_job and run_id), a watched PID (run_id "pid-<PID>") or a job's
// admissions (ramguard_job only).
// Its series are removed when a finished target has been retired for the retention period.
// Label values are bounded here: a client inventing phase names cannot grow the series without
// limit, and past max_targets live targets fold into one set labelled "other".

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "metrics/target_families.hpp"

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

using Labels = std::map<std::string, std::string>;

// The series stored inline, each a family with at most one label of its own.
enum class HotSeries : std::uint8_t {
  kRss,
  kAnon,  // memory_bytes{kind="anon"}
  kFile,
  kShmem,
  kKernel,  // memory_bytes{kind="kernel"}: cgroup scope only
  kSwap,
  kCounted,  // counted_bytes: anon + shmem + swap, the memory every verdict judges
  kLastReading,
  kPeak,
  kPeakExact,
  kUp,
  kExited,
  kDegradedUnreadable,  // degraded{reason="unreadable"}
  kDegradedHwmResetDenied,
  kReadSeconds,
  kSlowReads,
};
inline constexpr std::size_t kHotSeriesCount = static_cast<std::size_t>(HotSeries::kSlowReads) + 1;
static_assert(kHotSeriesCount <= 16, "TargetState::hot_present has a bit per inline series");

// Each inline series: its family and its own label, if any. "kind" sorts before ramguard_job,
// "reason" between ramguard_job and run_id: labels stay in name order, as parsers expect.
struct HotSeriesInfo {
  TargetFamily family;
  const char* label;  // nullptr: none
  const char* value;
  bool before_job;       // the label sorts before ramguard_job; otherwise between it and run_id
  const char* rendered;  // as written: `kind="anon",` before, `,reason="unreadable"` after
};
const HotSeriesInfo& hot_series_info(std::size_t slot);  // slot: a HotSeries as an index

class TargetScrape;

struct TargetState {
  Labels labels;           // ramguard_job, and run_id for a run
  std::string job_labels;  // rendered: ramguard_job="..."
  std::string run_labels;  // rendered: run_id="..." (empty for a job's admissions)
  std::array<double, kHotSeriesCount> hot{};
  std::uint16_t hot_present = 0;  // bit per HotSeries
  double peak_bytes = -1;
  double pss_read_seconds = 0;  // as exported (the series is not inline: set only when it changes)
  bool state_series = false;    // up, exited, degraded and verdict_active exist
  bool kernel_series = false;   // memory_bytes{kind="kernel"} exists (a cgroup's readings)
  bool readable = true;
  bool exited = false;
  bool finished = false;  // the run ended: its warnings no longer hold
  std::string degraded_reason;
  std::optional<std::chrono::nanoseconds> retired_at;  // monotonic
  std::uint32_t owner_uid = 0;  // counted against its owner's cap while live (root: never)

  struct Series {
    TargetFamily family;
    std::string labels;  // rendered, the target's own included
    double value = 0;
  };
  std::vector<Series> series;  // the other series
  std::map<std::string, std::set<std::string>, std::less<>> label_values;
};

class TargetSeries {
 public:
  explicit TargetSeries(std::size_t max_targets = kDefaultMaxTargets) : max_targets_(max_targets) {}
  TargetSeries(const TargetSeries&) = delete;  // the index points into this map's nodes
  TargetSeries& operator=(const TargetSeries&) = delete;
  void set_max_targets(std::size_t max_targets) { max_targets_ = max_targets; }
  std::size_t max_targets() const { return max_targets_; }
  // Live targets one UID other than root may hold (0: no cap); past it its new ones fold.
  void set_max_targets_per_user(std::size_t max) { max_targets_per_user_ = max; }
  std::size_t max_targets_per_user() const { return max_targets_per_user_; }
  // Live targets of `uid` with series of their own.
  std::size_t live_targets_of(std::uint32_t uid) const;
  // Live targets sharing the "other" series because the bound was reached.
  std::size_t folded_count() const { return folded_.size(); }
  // A folded target stopped being watched: it no longer counts.
  void forget_folded(std::string_view key);

  // The target's state under `key` (a run id, or "admission:<job>"), created with `labels`
  // on first use, owned by `owner_uid`.
  TargetState& target(std::string_view key, const Labels& labels, std::uint32_t owner_uid = 0);
  TargetState* find(std::string_view key);

  // The target's value in `family` with `extra` labels besides its own, created (0) on first
  // use. The reference of an inline series (HotSeries) stays valid until the series is
  // removed; any other only until the target's next new series.
  double& metric(TargetState& target, TargetFamily family, const Labels& extra = {});
  // The same for an inline series, without looking it up: the periodic path.
  static double& hot(TargetState& target, HotSeries series);
  // Removes one series of the target (e.g. a reading gauge once the process is gone).
  void remove_metric(TargetState& target, TargetFamily family, const Labels& extra = {});

  // A label value safe to export: truncated, and folded into "other" past the per-target limit.
  std::string bounded_value(TargetState& target, std::string_view label, std::string_view value);

  // The target stopped being watched at `now`; its series stay until sweep() passes the
  // retention.
  void retire(std::string_view key, std::chrono::nanoseconds now);
  // The target is watched again (a new admission of its job): it stays.
  void revive(TargetState& target);
  // Removes the series of targets retired at least `retention` before `now`; returns how many.
  std::size_t sweep(std::chrono::nanoseconds now, std::chrono::nanoseconds retention);
  // Removes the target's series at once.
  void remove(std::string_view key);

  std::size_t target_count() const { return targets_.size(); }
  bool has_target(std::string_view key) const { return targets_.find(key) != targets_.end(); }

  // Copies every target's series for one scrape (under the exporter's lock).
  void copy_to(TargetScrape& scrape) const;

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  // find()'s index over the map's nodes (their addresses are stable): open addressing in one
  // array, at most half full; a new target is placed in it, a removal rebuilds it (linear
  // probing has no cheap delete, and targets leave rarely). The periodic path looks a target
  // up at every reading, and the map's bucket chain cost two cache misses (a third of that
  // path's own time at a thousand targets) before the state itself.
  struct IndexSlot {
    std::size_t hash = 0;
    const std::string* key = nullptr;
    TargetState* state = nullptr;  // nullptr: empty
  };
  void rebuild_index();
  void index_added(const std::string& key, TargetState& state);
  void index_place(const std::string& key, TargetState& state);
  std::string series_labels(const TargetState& target, const Labels& extra) const;
  void remove_all(TargetState& target);
  void count_live(const TargetState& target, int delta);
  bool owner_full(std::uint32_t owner_uid) const;
  bool evict_oldest_retired();

  std::size_t max_targets_;
  std::size_t max_targets_per_user_ = 0;
  std::unordered_map<std::uint32_t, std::size_t> live_by_owner_;  // live targets, not root's
  std::unordered_map<std::string, TargetState, Hash, std::equal_to<>> targets_;
  std::vector<IndexSlot> index_;
  std::unordered_set<std::string, Hash, std::equal_to<>> folded_;
  std::size_t retired_ = 0;  // targets with retired_at set: sweep() has nothing to do without
};

}  // namespace ramguard
