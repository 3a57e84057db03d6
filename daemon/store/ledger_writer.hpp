#pragma once
// The ledger's writes: runs and their records, samples, reservations, censuses, retention, and
// group commit (the writes of one event-loop turn in one transaction). A write that changes
// which run is a job's peak on record tells the queries' cache. A failed write is rolled back
// whole and leaves the writer usable. Not thread-safe: the daemon's io_context only.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/ledger.hpp"
#include "model/verdict.hpp"
#include "ramguard/base/result.hpp"
#include "store/records.hpp"

namespace ramguard {

class LedgerQueries;
class SqliteDb;

class LedgerWriter {
 public:
  LedgerWriter(SqliteDb& db, LedgerQueries& queries) : db_(db), queries_(queries) {}
  LedgerWriter(const LedgerWriter&) = delete;
  LedgerWriter& operator=(const LedgerWriter&) = delete;

  // Runs `writes` (calls to the methods below) as one transaction: one fsync for all of them,
  // and all or nothing. Use it to store a mark with the phase and boundary it updates.
  Status atomically(const std::function<Status()>& writes);

  // ---- group commit (ledger_writer_batch.cpp) ----
  // With batching on, the first write joined to the batch opens a transaction and later writes
  // become savepoints in it, until commit_batch(): many marks, one COMMIT and one WAL append.
  // A write that returned Ok is then durable only once commit_batch() returned Ok. Off (the
  // default), every write commits before it returns.
  using BatchLostListener =
      std::function<void(const std::vector<std::string>& run_ids, const Error& error)>;
  void set_batching(bool on) { batching_ = on; }
  bool batching() const { return batching_; }
  // Called once per batch, when its first write opens it: whoever owns the event loop
  // schedules commit_batch() so writes no request waits for are durable in bounded time too.
  void set_batch_opened_listener(std::function<void()> listener) {
    batch_opened_ = std::move(listener);
  }
  // Told the runs whose writes a failed commit_batch() lost (their replies said stored).
  void set_batch_lost_listener(BatchLostListener listener) { batch_lost_ = std::move(listener); }
  // Told the outcome of every batch that was open (committed or rolled back): the ledger
  // journal keeps a batch's writes until then, to journal them again if they were lost.
  void set_batch_ended_listener(std::function<void(bool committed)> listener) {
    batch_ended_ = std::move(listener);
  }
  // Opens the batch if batching and none is open; `run_id` (may be empty) names whose write
  // joins it. Call before the writes; a no-op without batching.
  Status join_batch(std::string_view run_id);
  bool batch_open() const { return batch_open_; }
  // Commits the open batch (Ok when none is open). On failure every write of the batch is
  // rolled back, the batch-lost listener is told and batches_lost() grows.
  Status commit_batch();
  std::uint64_t batches_committed() const { return batches_committed_; }
  std::uint64_t batches_lost() const { return batches_lost_; }
  // Tests: the next commit_batch() rolls back as if COMMIT had failed (an fsync error cannot
  // be provoked on demand).
  void fail_next_commit_for_testing() { fail_next_commit_ = true; }

  // ---- runs ----
  // Stores a new run: its info, labels, state, times, readings and any marks, phases,
  // boundaries and verdicts already in the ledger. A run id already stored is an error.
  Status begin_run(const RunLedger& ledger);
  Status append_mark(const std::string& run_id, const MarkRecord& mark);  // seq must be new
  Status save_phase(const std::string& run_id,
                    const PhaseRecord& phase);  // upsert: phase/round/begin
  Status save_boundary(const std::string& run_id, const BoundaryRecord& boundary);  // upsert: round
  // Upsert keyed by kind, round, phase and raise time (at.monotonic): saving the same verdict
  // again updates it (cleared, figures, summary).
  Status save_verdict(const std::string& run_id, const Verdict& verdict);
  // The client's census of a round end (or the run's end): replaces one of the same round.
  // Its address ranges are not kept: they were placed when it arrived.
  Status save_census(const std::string& run_id, const CensusRecord& census);
  // The run's latest reading and peak while it is active, so restart recovery has them.
  Status update_progress(const std::string& run_id, std::uint64_t peak_bytes, bool peak_exact,
                         const MemoryReading& last);
  // Final state (not kActive), end time, peak and last reading.
  Status end_run(const std::string& run_id, RunState state, const Instant& ended,
                 std::uint64_t peak_bytes, const MemoryReading& last, bool peak_exact = false);
  // Ends a run restart recovery could not decode as lost, now.
  Status end_undecodable(const std::string& run_id);
  // Appends downsampled samples in one transaction; a sample at an already stored
  // at_unix_ms replaces it (re-sending a bucket is harmless).
  Status append_samples(const std::string& run_id, std::span<const ProgressSample> samples);

  // Retention: deletes finished runs (not active ones) that ended before the given wall time,
  // with all their records. Returns how many runs went.
  Result<std::size_t> prune_runs(std::chrono::nanoseconds ended_before_wall);
  // Deletes the `count` finished runs that ended first. Returns how many went.
  Result<std::size_t> prune_oldest_runs(std::size_t count);

  // ---- reservations ----
  Status save_reservation(const Reservation& reservation);  // upsert by id
  Status delete_reservation(const std::string& id);         // absent id: Ok

 private:
  // Writes without their own transaction; the public methods wrap them.
  Status insert_run(const RunLedger& ledger);
  Status write_mark(const std::string& run_id, const MarkRecord& mark);
  Status write_phase(const std::string& run_id, const PhaseRecord& phase);
  Status write_boundary(const std::string& run_id, const BoundaryRecord& boundary);
  Status write_verdict(const std::string& run_id, const Verdict& verdict);
  // The Error for a failed write to `run_id`: "unknown run id" when a foreign key failed.
  Error write_error(const Error& e, const std::string& run_id);

  SqliteDb& db_;
  LedgerQueries& queries_;  // its cache of peaks on record, and require_run
  bool batching_ = false;
  bool batch_open_ = false;
  std::vector<std::string> batch_runs_;  // whose writes the open batch holds, each once
  std::uint64_t batches_committed_ = 0;
  std::uint64_t batches_lost_ = 0;
  bool fail_next_commit_ = false;
  std::function<void()> batch_opened_;
  BatchLostListener batch_lost_;
  std::function<void(bool committed)> batch_ended_;
};

}  // namespace ramguard
