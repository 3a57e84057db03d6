#include "app/upkeep.hpp"

namespace ramguard {
namespace {

bool due(const Instant& last, std::chrono::nanoseconds every, const Instant& now) {
  return now.monotonic - last.monotonic >= every;
}

}  // namespace

Upkeep::Upkeep(const Clock& clock, Ticker& ticker, UpkeepParts parts, RetentionConfig retention)
    : clock_(clock),
      ticker_(ticker),
      parts_(parts),
      retention_(retention),
      last_store_retry_(clock.now()),
      last_retention_(clock.now()) {}

void Upkeep::start() {
  ticker_.start(kPeriod, [this] { tick(); });
}

void Upkeep::tick() {
  const Instant now = clock_.now();
  // Lease expiry reaches the metrics and the ledger through the registry's observers.
  parts_.registry.housekeeping();
  parts_.metrics.table()->sweep(now);
  {
    auto daemon = parts_.metrics.daemon();
    (void)daemon->update_self("/proc/self/statm");
    daemon->observe_sample_duration(parts_.sampler.last_sample_duration_seconds());
  }
  Store* store = parts_.store;
  // A file opened read-only stays so until the daemon restarts: no point rewriting, but once
  // its disk takes writes again the log and the status say that a restart is needed.
  if (store != nullptr && !store->writable() && due(last_store_retry_, kStoreRetry, now)) {
    last_store_retry_ = now;
    if (store->opened_read_only()) {
      (void)store->restart_would_write();
    } else {
      parts_.registry.sync_reservations();
    }
  }
  // What was journalled while the ledger refused writes: retried every tick (one write while
  // the disk stays full), so it is written soon after space comes back.
  if (LedgerJournal* journal = parts_.journal) {
    if (journal->behind()) (void)journal->flush_pending();
    parts_.metrics.daemon()->set_store_journal(
        journal->pending_writes(), journal->max_pending_writes(), journal->dropped_writes());
  }
  // Retention: finished runs only (store/retention.hpp).
  if (store != nullptr && due(last_retention_, kRetentionEvery, now)) {
    last_retention_ = now;
    apply_retention_logged(*store, retention_, now.wall);
  }
}

}  // namespace ramguard
