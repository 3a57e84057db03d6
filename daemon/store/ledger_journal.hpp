#pragma once
// The store as runs see it: a durable RunObserver (every mark, boundary, verdict and end is
// written before it is acknowledged) and the RunSource that restart recovery reads.

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "runs/observer.hpp"
#include "runs/run_source.hpp"
#include "store/records.hpp"
#include "store/store.hpp"

namespace ramguard {

class LedgerJournal final : public RunObserver, public RunSource {
 public:
  explicit LedgerJournal(Store& store) : store_(store) {}

  bool durable() const override { return true; }
  Status run_started(const RunLedger& ledger) override;
  Status marked(const RunLedger& ledger, const MarkRecord& mark, const PhaseRecord* phase,
                const BoundaryRecord* boundary) override;
  Status boundary_settled(const RunLedger& ledger, const BoundaryRecord& boundary) override;
  Status verdict(const RunLedger& ledger, const Verdict& verdict) override;
  Status progress(const RunLedger& ledger, const ProgressSample& sample) override;
  Status run_finished(const RunLedger& ledger,
                      const std::vector<const PhaseRecord*>& closed_phases) override;
  Status reservations(const std::vector<ReservationRow>& rows,
                      std::uint64_t reserved_bytes) override;

  Result<std::vector<RunLedger>> load_active_runs() override;
  Result<std::vector<ReservationRow>> load_reservations() override;

 private:
  Store& store_;
  // What the store holds, by id, once read: reservations() writes only the difference.
  std::optional<std::map<std::string, StoredReservation>> stored_reservations_;
  std::uint64_t batches_lost_seen_ = 0;  // store_.batches_lost() when the cache was checked
};

}  // namespace ramguard
