#pragma once
// The durable run ledger: every run's info, marks, phase peaks, boundary readings, verdicts and
// downsampled samples, plus admission reservations, in <state_dir>/ramguard.db (SQLite, WAL).
//
// Durability: a mark is acknowledged only after append_mark returns Ok. The daemon opens the
// store with synchronous=NORMAL (StoreOptions::sync_every_commit = false, app/daemon.cpp): a
// commit is in the kernel before the call returns, so kill -9 loses nothing acknowledged and only
// power loss may lose the last commits. The option's default, FULL, fsyncs each commit. Instants
// are stored as wall ns since the epoch and CLOCK_MONOTONIC ns; both come back exactly as given. A
// failed write is rolled back whole and leaves the Store usable. Not thread-safe: call it from the
// daemon's io_context only.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/ledger.hpp"
#include "model/verdict.hpp"
#include "ramguard/base/result.hpp"
#include "store/records.hpp"
#include "store/write_health.hpp"

namespace ramguard {

class SqliteDb;
class WalCheckpointer;

struct StoreOptions {
  // Cap on the database file (rounded down to whole pages; never below its current size);
  // 0 = no cap. Writes beyond it fail with "disk full while ...", like a full disk.
  std::uint64_t max_db_bytes = 0;
  // Run PRAGMA quick_check at open so a corrupt file is refused up front (linear in the size).
  bool verify_on_open = true;
  // true: synchronous=FULL, every commit is fsync'ed before the call returns (survives power
  // loss and kernel crashes; a few ms per commit on a VM disk). false: synchronous=NORMAL, the
  // WAL is written but fsync'ed only at checkpoints (survives a daemon crash or kill -9, may lose
  // the last commits on power loss; tens of us). See the mark cost printed by store_test.
  bool sync_every_commit = true;
  // Space kept on the ledger's disk for the stop (`ramguard.reserve` beside the file): a daemon
  // stopped while the disk is full frees it to write what its journal holds. 0: none.
  std::uint64_t reserve_bytes = 0;
  // Checkpoint the write-ahead log on a thread of its own (store/wal_checkpointer.hpp) instead
  // of inside the commit that crosses SQLite's threshold: the daemon's event loop never waits
  // for one. Off for short-lived tools, which gain nothing from a thread.
  bool checkpoint_in_background = false;
  // Each commit's log in one write (store/wal_write_vfs.hpp); false: SQLite's default VFS.
  bool coalesce_wal_writes = true;
};

// Jobs whose peak on record is kept in memory between admissions.
inline constexpr std::size_t kMaxCachedJobPeaks = 256;
// How many of a job's most recent completed runs job_peak_on_record looks at.
inline constexpr std::size_t kRecentRunsForPeak = 10;

class Store {
 public:
  static constexpr const char* kFileName = "ramguard.db";

  // Creates state_dir (mode 0750) if missing and opens or creates state_dir/ramguard.db.
  // Errors name the path: an uncreatable directory, an unwritable or corrupt file, a file that
  // is not a ramguard database, a schema newer than this build. A ledger that exists but cannot
  // be written (read-only disk, full disk before a migration) opens read-only instead, so its
  // runs and reservations are still restored; writable() is then false.
  static Result<std::unique_ptr<Store>> open(const std::filesystem::path& state_dir,
                                             const StoreOptions& options = {});
  // A second, read-only connection to an open ledger `file`, for reads on another thread
  // (store/store_reader.hpp): no check, no migration, a small page cache. Its reads see what
  // the writer committed.
  static Result<std::unique_ptr<Store>> open_reader(const std::filesystem::path& file);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::filesystem::path& path() const;

  // False while writes fail for want of a writable disk (read-only, full, corrupt, I/O
  // error); the reason names the last failure. Turns true again when a write succeeds.
  bool writable() const { return health_.writable(); }
  const std::string& unwritable_reason() const { return health_.reason(); }
  // True when the file was opened read-only at startup: it stays unwritable until a restart.
  bool opened_read_only() const { return opened_read_only_; }
  // Opened read-only at startup for a disk that refused writes: true once the disk would take
  // writes again (free space, not mounted read-only), which is logged once
  // (store.restart_needed) and joins the unwritable reason: only a restart writes the file again.
  bool restart_would_write();
  // The stop's reserve (StoreOptions::reserve_bytes): release_reserve() deletes it so the
  // journal can be written (false when there was none); keep_reserve() makes it again once the
  // disk has room (false when it could not).
  bool release_reserve();
  bool keep_reserve();
  // Told of every change of writable() (and at once): metrics.
  void set_writable_listener(WriteHealth::Listener listener) {
    health_.set_listener(std::move(listener));
  }

  // Runs `writes` (calls to the methods below) as one transaction: one fsync for all of them,
  // and all or nothing. Use it to store a mark with the phase and boundary it updates.
  Status atomically(const std::function<Status()>& writes);
  // ---- group commit (store_batch.cpp) ----
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

  // Changes the size cap at runtime (0 = none); see StoreOptions::max_db_bytes.
  Status set_max_db_bytes(std::uint64_t bytes);

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
  // The client's census of a round end (or the run's end): replaces one of the same round
  // (store_census.cpp). Its address ranges are not kept: they were placed when it arrived.
  Status save_census(const std::string& run_id, const CensusRecord& census);
  // The run's censuses, oldest first; empty before schema 5.
  Result<std::vector<CensusRecord>> load_censuses(const std::string& run_id);
  // The run's latest reading and peak while it is active, so restart recovery has them.
  Status update_progress(const std::string& run_id, std::uint64_t peak_bytes, bool peak_exact,
                         const MemoryReading& last);
  // Final state (not kActive), end time, peak and last reading.
  Status end_run(const std::string& run_id, RunState state, const Instant& ended,
                 std::uint64_t peak_bytes, const MemoryReading& last, bool peak_exact = false);
  // Appends downsampled samples in one transaction; a sample at an already stored
  // at_unix_ms replaces it (re-sending a bucket is harmless).
  Status append_samples(const std::string& run_id, std::span<const ProgressSample> samples);

  // Retention: deletes finished runs (not active ones) that ended before the given wall time,
  // with all their records. Returns how many runs went.
  Result<std::size_t> prune_runs(std::chrono::nanoseconds ended_before_wall);
  // Deletes the `count` finished runs that ended first. Returns how many went.
  Result<std::size_t> prune_oldest_runs(std::size_t count);
  // Runs in the ledger (active ones included) and how many of them have finished.
  Result<std::size_t> run_count();
  Result<std::size_t> finished_run_count();
  // Bytes of the file's pages in use (pages freed by pruning are reused before it grows).
  Result<std::uint64_t> used_bytes();

  // ---- reservations ----
  Status save_reservation(const Reservation& reservation);  // upsert by id
  Status delete_reservation(const std::string& id);         // absent id: Ok
  Result<std::vector<Reservation>> load_reservations();     // oldest first

  // ---- reading back ----
  // Full ledgers of runs in state active, oldest first, for restart recovery. A run that
  // cannot be decoded is skipped with a logged reason and ended lost when the file is writable;
  // only a failure to read the runs table at all is an error.
  Result<std::vector<RunLedger>> load_active_runs();
  // The same, one run at a time and streamed: `resume` gets each run's head (the runs row,
  // labels and scope; no records) and reads its records through the stream_* calls below before
  // the next run is read. An error it returns skips the run as undecodable.
  Status for_each_active_run(const std::function<Status(RunLedger head)>& resume);
  // A run's records, one at a time, oldest first (as load_run orders them), so a reader holds
  // no more of them than it keeps. stream_marks: only the newest `newest` when given.
  Result<std::uint64_t> mark_count(const std::string& run_id);
  Status stream_marks(const std::string& run_id, std::optional<std::uint64_t> newest,
                      const std::function<void(MarkRecord)>& take);
  Status stream_phases(const std::string& run_id, const std::function<void(PhaseRecord)>& take);
  Status stream_boundaries(const std::string& run_id,
                           const std::function<void(BoundaryRecord)>& take);
  Status stream_verdicts(const std::string& run_id, std::optional<std::int64_t> only_id,
                         const std::function<void(Verdict)>& take);
  // Marks by seq, phases and verdicts in the order first saved, boundaries by round.
  // An unknown id is an error starting with "unknown run id" (see is_unknown_run).
  Result<RunLedger> load_run(const std::string& run_id);
  Result<std::vector<RunSummary>> list_runs(std::size_t limit);  // most recent start first
  // Runs carrying every given label (key=value); most recent first. An empty map lists all.
  Result<std::vector<RunSummary>> find_runs_by_labels(
      const std::map<std::string, std::string>& labels, std::size_t limit = 1000);
  Result<std::vector<ProgressSample>> load_samples(const std::string& run_id);  // by time
  // The largest measured peak among the job's `recent_runs` most recently ended runs (state
  // ended, peak > 0; exited and lost runs stopped early and would under-estimate). nullopt when
  // the job has none.
  // `owners` non-empty: only runs owned by one of those UIDs count (a user's tiny run under
  // another user's job name must not calibrate that user's admissions); empty: every run.
  Result<std::optional<JobPeak>> job_peak_on_record(const std::string& job,
                                                    std::size_t recent_runs = kRecentRunsForPeak,
                                                    const std::vector<std::uint32_t>& owners = {});
  // Per job and owner, the ended runs with a peak (as job_peak_on_record counts them): the
  // largest peak and how many; the `limit` most recently ended pairs first.
  Result<std::vector<JobFacts>> job_facts(std::size_t limit);

 private:
  explicit Store(std::unique_ptr<SqliteDb> db, std::int64_t schema_version);
  static Result<std::unique_ptr<Store>> open_read_only(const std::filesystem::path& file,
                                                       const Error& write_error);
  // Writes without their own transaction; the public methods wrap them.
  Status insert_run(const RunLedger& ledger);
  Status write_mark(const std::string& run_id, const MarkRecord& mark);
  Status write_phase(const std::string& run_id, const PhaseRecord& phase);
  Status write_boundary(const std::string& run_id, const BoundaryRecord& boundary);
  Status write_verdict(const std::string& run_id, const Verdict& verdict);
  // The Error for a failed write to `run_id`: "unknown run id" when a foreign key failed.
  Error write_error(const Error& e, const std::string& run_id);
  Status require_run(const std::string& run_id, const char* operation);
  Status end_undecodable(const std::string& run_id);
  Result<std::vector<RunSummary>> summaries(const std::string& where_sql,
                                            const std::vector<std::string>& params,
                                            std::size_t limit);
  Status load_labels(RunInfo& info);
  Status load_scope(RunInfo& info);  // the run_scopes row, if any (schema 3+)
  Status load_details(RunLedger& ledger);
  Status load_head_details(RunInfo& info);  // labels and scope
  Result<std::vector<Verdict>> load_verdicts(const std::string& run_id,
                                             std::optional<std::int64_t> only_id);

  std::unique_ptr<SqliteDb> db_;
  // Declared after db_, so it stops before the connection whose log it checkpoints closes.
  std::unique_ptr<WalCheckpointer> checkpointer_;
  std::int64_t schema_version_;
  // job_peak_on_record's answers for the default window, asked at every admission: they
  // change only when a run ends or runs are pruned, which clear this.
  std::map<std::string, std::optional<JobPeak>, std::less<>> job_peaks_;
  WriteHealth health_;
  bool opened_read_only_ = false;
  bool restart_needed_said_ = false;
  std::uint64_t reserve_bytes_ = 0;
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

// True for the error load_run and the write methods give for a run id not in the store.
bool is_unknown_run(const Error& error);

}  // namespace ramguard
