#pragma once
// Reads the ledger on a thread and a read-only connection of its own, so a long read (a report
// of a run at its 100,000-mark bound: 220-240 ms) never holds the event loop, and with it every
// coordinator's marks. Like the WAL checkpointer: the loop's connection keeps the writes; this
// one sees what they committed (WAL readers never block the writer, nor it them).
//
// Jobs run one at a time, in order, so at most one loaded run is in memory for them at once.

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "ramguard/base/result.hpp"

namespace ramguard {

class LedgerQueries;
class SqliteDb;

class StoreReader {
 public:
  // A job: its reads through `ledger` (the thread's read-only connection), then its own
  // hand-back (typically a post to the event loop).
  using Job = std::function<void(LedgerQueries& ledger)>;

  // Opens `file` read-only (an existing ledger) and starts the thread.
  static Result<std::unique_ptr<StoreReader>> start(const std::filesystem::path& file);
  // Waits for the job in progress; jobs still queued are dropped unrun, on the calling thread.
  ~StoreReader();
  StoreReader(const StoreReader&) = delete;
  StoreReader& operator=(const StoreReader&) = delete;

  // Any thread.
  void post(Job job);
  std::size_t jobs_waiting() const;

 private:
  explicit StoreReader(std::unique_ptr<SqliteDb> db, std::int64_t schema_version);
  void run();

  // Used on the thread only; ledger_ reads through db_, which outlives it.
  std::unique_ptr<SqliteDb> db_;
  std::unique_ptr<LedgerQueries> ledger_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Job> jobs_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace ramguard
