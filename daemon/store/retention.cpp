#include "store/retention.hpp"

#include <algorithm>

#include "common/log.hpp"

namespace ramguard {

Result<RetentionOutcome> apply_retention(Store& store, const RetentionConfig& retention,
                                         std::chrono::nanoseconds now_wall) {
  RetentionOutcome out;
  if (retention.max_age_days > 0) {
    const auto max_age = std::chrono::hours(24) * retention.max_age_days;
    auto pruned = store.prune_runs(now_wall - max_age);
    if (!pruned) return pruned.error();
    out.pruned_by_age = *pruned;
  }
  if (retention.max_runs > 0) {
    auto runs = store.run_count();
    if (!runs) return runs.error();
    if (*runs > retention.max_runs) {
      auto pruned = store.prune_oldest_runs(*runs - retention.max_runs);
      if (!pruned) return pruned.error();
      out.pruned_by_count = *pruned;
    }
  }
  auto used = store.used_bytes();
  if (!used) return used.error();
  if (retention.max_bytes > 0) {
    // A tenth of the finished runs at a time: few passes, and no run more than needed.
    while (*used > retention.max_bytes) {
      auto finished = store.finished_run_count();
      if (!finished) return finished.error();
      if (*finished == 0) break;  // only active runs left: they are never pruned
      auto pruned = store.prune_oldest_runs(std::max<std::size_t>(1, *finished / 10));
      if (!pruned) return pruned.error();
      out.pruned_by_size += *pruned;
      used = store.used_bytes();
      if (!used) return used.error();
    }
  }
  out.used_bytes = *used;
  auto runs = store.run_count();
  if (!runs) return runs.error();
  out.runs_left = *runs;
  return out;
}

void apply_retention_logged(Store& store, const RetentionConfig& retention,
                            std::chrono::nanoseconds now_wall) {
  if (!store.writable()) return;
  auto outcome = apply_retention(store, retention, now_wall);
  if (!outcome) {
    log::error("store.retention_failed", {{"reason", outcome.error().message}});
    return;
  }
  if (outcome->pruned() == 0) return;
  log::info("store.pruned", {{"by_age", outcome->pruned_by_age},
                             {"by_count", outcome->pruned_by_count},
                             {"by_size", outcome->pruned_by_size},
                             {"runs_left", outcome->runs_left},
                             {"used_bytes", outcome->used_bytes}});
}

}  // namespace ramguard
