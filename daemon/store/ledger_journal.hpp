#pragma once
// The store as runs see it: a durable RunObserver (every mark, boundary, verdict and end is
// written before it is acknowledged) and the RunSource that restart recovery reads.
//
// While the ledger cannot take writes (full disk, I/O errors), what runs do is journalled in
// memory (PendingWrites, bounded) and written, in order and before any newer write, as soon as
// the store takes writes again; the replies meanwhile say stored:false. A batch that was rolled
// back at its commit puts its writes back at the head of the journal. A file opened read-only
// is not journalled: it stays read-only until a restart, so the journal could never be written.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "runs/observer.hpp"
#include "runs/run_source.hpp"
#include "store/pending_writes.hpp"
#include "store/records.hpp"
#include "store/store.hpp"

namespace ramguard {

class LedgerJournal final : public RunObserver, public RunSource {
 public:
  explicit LedgerJournal(Store& store, std::size_t max_pending_writes = kDefaultPendingWrites);
  ~LedgerJournal() override;
  LedgerJournal(const LedgerJournal&) = delete;
  LedgerJournal& operator=(const LedgerJournal&) = delete;

  bool durable() const override { return true; }
  Status run_started(const RunLedger& ledger) override;
  Status marked(const RunLedger& ledger, const MarkRecord& mark, const PhaseRecord* phase,
                const BoundaryRecord* boundary) override;
  Status boundary_settled(const RunLedger& ledger, const BoundaryRecord& boundary) override;
  Status verdict(const RunLedger& ledger, const Verdict& verdict) override;
  Status census(const RunLedger& ledger, const CensusRecord& census) override;
  Status progress(const RunLedger& ledger, const ProgressSample& sample) override;
  Status peak_revised(const RunLedger& ledger) override;
  Status run_finished(const RunLedger& ledger,
                      const std::vector<const PhaseRecord*>& closed_phases) override;
  Status reservations(const std::vector<Reservation>& rows, std::uint64_t reserved_bytes) override;

  Result<std::vector<RunLedger>> load_active_runs() override;
  // Each run's records streamed from the file (store_.stream_*), never loaded whole.
  Status for_each_active_run(
      const std::function<Status(RunLedger head, RunRecords& records)>& resume) override;
  Result<std::vector<Reservation>> load_reservations() override;

  // Writes the journal to the store, oldest first; true when nothing is left unwritten. Called
  // once a second: after a failure only this retries, with one write (a probe), and only once
  // a probe has reached the file is the rest written (no rewriting a large journal at every
  // request while the disk stays full).
  bool flush_pending();
  bool behind() const { return !pending_.empty() || unsaved_reservations_.has_value(); }
  // At stop: writes what the journal holds, with the store's reserve freed if the disk is
  // still full, then the run ends alone (a restart must not resume a run that ended); logs
  // what it wrote and what it drops (store.journal_written_at_stop, store.journal_dropped).
  void write_at_stop();
  // Told whenever the journal's size changes (metrics: right at once, not at the next tick).
  void set_changed_listener(std::function<void()> listener) { changed_ = std::move(listener); }
  std::size_t pending_writes() const { return pending_.size(); }
  std::size_t max_pending_writes() const { return pending_.max_entries(); }
  void set_max_pending_writes(std::size_t max) { pending_.set_max_entries(max); }
  std::uint64_t dropped_writes() const { return pending_.dropped(); }
  // For a reply that says stored:false: what became of its write (empty when stored).
  std::string unstored_note() const;

 private:
  enum class Attempt { kWritten, kLater, kRefused };
  // Writes `write` now, or journals it behind the writes already waiting.
  Status write(const std::string& run_id, const char* what, std::function<Status()> apply);
  Attempt attempt(PendingWrite& write, Status& status);
  bool drain();            // writes what waits, if a retry is due; true when nothing waits
  void failed_to_write();  // back to probing, at the next flush_pending()
  Status write_reservations(const std::vector<Reservation>& rows);
  void batch_ended(bool committed);
  bool drain_at_stop();  // true when nothing waits
  void changed() const {
    if (changed_) changed_();
  }

  Store& store_;
  PendingWrites pending_;
  std::vector<PendingWrite> in_batch_;  // written into the open batch, not yet committed
  std::uint64_t journalled_since_flush_ = 0;
  std::uint64_t replayed_in_batch_ = 0;  // journalled writes in the open batch
  bool retry_due_ = true;                // false after a failure until flush_pending()
  std::size_t flush_limit_ = SIZE_MAX;   // 1 while probing
  // The latest reservation rows, when the store has not taken them yet.
  std::optional<std::vector<Reservation>> unsaved_reservations_;
  std::vector<Reservation> last_reservations_;  // put back if their batch is lost
  // What the store holds, by id, once read: reservations() writes only the difference.
  std::optional<std::map<std::string, Reservation>> stored_reservations_;
  std::uint64_t batches_lost_seen_ = 0;  // store_.batches_lost() when the cache was checked
  std::function<void()> changed_;
};

}  // namespace ramguard
