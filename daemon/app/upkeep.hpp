#pragma once
// The daemon's periodic upkeep, once a second on its Ticker: lease expiry and forgetting ended
// runs (the registry's housekeeping), metrics retention and the guard's own cost, the ledger
// journal's retry, rewriting reservations while the ledger refuses writes, and hourly ledger
// retention. What is due is decided from the Clock, not from counting ticks, so fake-clock
// tests cover every cadence.

#include <chrono>

#include "app/ticker.hpp"
#include "common/clock.hpp"
#include "metrics/exporter.hpp"
#include "runs/run_registry.hpp"
#include "sampling/sampler.hpp"
#include "store/ledger_journal.hpp"
#include "store/retention.hpp"
#include "store/store.hpp"

namespace ramguard {

struct UpkeepParts {
  RunRegistry& registry;
  Sampler& sampler;
  MetricsExporter& metrics;
  Store* store = nullptr;            // null: runs are guarded in memory only
  LedgerJournal* journal = nullptr;  // present with the store
};

class Upkeep {
 public:
  static constexpr std::chrono::seconds kPeriod{1};
  // While the ledger refuses writes (a full disk), the reservations are rewritten this often,
  // so space coming back is noticed without waiting for a mark.
  static constexpr std::chrono::seconds kStoreRetry{5};
  static constexpr std::chrono::hours kRetentionEvery{1};

  // Counts its cadences from `clock`'s now: the daemon applies retention once at start itself.
  Upkeep(const Clock& clock, Ticker& ticker, UpkeepParts parts, RetentionConfig retention);
  ~Upkeep() { ticker_.stop(); }
  Upkeep(const Upkeep&) = delete;
  Upkeep& operator=(const Upkeep&) = delete;

  void start();
  void stop() { ticker_.stop(); }
  void set_retention(const RetentionConfig& retention) { retention_ = retention; }
  // One pass: what is due at the clock's now.
  void tick();

 private:
  const Clock& clock_;
  Ticker& ticker_;
  UpkeepParts parts_;
  RetentionConfig retention_;
  Instant last_store_retry_;
  Instant last_retention_;
};

}  // namespace ramguard
