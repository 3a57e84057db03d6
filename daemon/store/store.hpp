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
//
// Store owns the connection, the file's health and its checkpointer, and derives from its reads
// (LedgerQueries, store/ledger_queries.hpp) and its writes (LedgerWriter), each with state of its
// own: whoever holds a Store reaches both; what needs one side only takes that class.

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
#include "store/ledger_queries.hpp"
#include "store/ledger_writer.hpp"
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

class Store : public LedgerQueries, public LedgerWriter {
 public:
  static constexpr const char* kFileName = "ramguard.db";

  // Creates state_dir (mode 0750) if missing and opens or creates state_dir/ramguard.db.
  // Errors name the path: an uncreatable directory, an unwritable or corrupt file, a file that
  // is not a ramguard database, a schema newer than this build. A ledger that exists but cannot
  // be written (read-only disk, full disk before a migration) opens read-only instead, so its
  // runs and reservations are still restored; writable() is then false.
  static Result<std::unique_ptr<Store>> open(const std::filesystem::path& state_dir,
                                             const StoreOptions& options = {});
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

  // Changes the size cap at runtime (0 = none); see StoreOptions::max_db_bytes.
  Status set_max_db_bytes(std::uint64_t bytes);

  // ---- restart recovery (store_recovery.cpp) ----
  // Full ledgers of runs in state active, oldest first, for restart recovery. A run that
  // cannot be decoded is skipped with a logged reason and ended lost when the file is writable;
  // only a failure to read the runs table at all is an error.
  Result<std::vector<RunLedger>> load_active_runs();
  // The same, one run at a time and streamed: `resume` gets each run's head (the runs row,
  // labels and scope; no records) and reads its records through the stream_* calls before
  // the next run is read. An error it returns skips the run as undecodable.
  Status for_each_active_run(const std::function<Status(RunLedger head)>& resume);

 private:
  explicit Store(std::unique_ptr<SqliteDb> db, std::int64_t schema_version);
  static Result<std::unique_ptr<Store>> open_read_only(const std::filesystem::path& file,
                                                       const Error& write_error);
  std::unique_ptr<SqliteDb> db_;
  // Declared after db_, so it stops before the connection whose log it checkpoints closes.
  std::unique_ptr<WalCheckpointer> checkpointer_;
  WriteHealth health_;
  bool opened_read_only_ = false;
  bool restart_needed_said_ = false;
  std::uint64_t reserve_bytes_ = 0;
};

}  // namespace ramguard
