#pragma once
// Ledger retention: finished runs are deleted, oldest first, when they ended more than
// max_age_days ago, when the ledger holds more than max_runs runs, or while the file's pages
// in use exceed max_bytes. Active runs are never deleted. main applies it at startup and
// hourly; pages freed by a deletion are reused by later writes, so the file stays near the cap.

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "config/config.hpp"
#include "ramguard/base/result.hpp"
#include "store/store.hpp"

namespace ramguard {

struct RetentionOutcome {
  std::size_t pruned_by_age = 0;
  std::size_t pruned_by_count = 0;
  std::size_t pruned_by_size = 0;
  std::size_t runs_left = 0;
  std::uint64_t used_bytes = 0;  // after pruning
  std::size_t pruned() const { return pruned_by_age + pruned_by_count + pruned_by_size; }
};

// now_wall: the current wall-clock time since the epoch.
Result<RetentionOutcome> apply_retention(Store& store, const RetentionConfig& retention,
                                         std::chrono::nanoseconds now_wall);

// apply_retention, logged: store.pruned (info) when runs went, store.retention_failed (error)
// when it could not run. Only a writable ledger is pruned.
void apply_retention_logged(Store& store, const RetentionConfig& retention,
                            std::chrono::nanoseconds now_wall);

}  // namespace ramguard
