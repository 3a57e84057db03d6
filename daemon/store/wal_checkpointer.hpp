#pragma once
// Copies the ledger's write-ahead log back into the database file on a thread and a connection
// of its own. SQLite's automatic checkpoint runs inside the COMMIT that crosses its threshold, on
// the committing thread: for the daemon that is the event loop, which then reads the log back,
// writes the pages and waits for two fdatasyncs while every client's reply waits too (marks from
// 64 coordinators: 7,000/s with it, 14,000/s without it, p99 31 ms against 8 ms).
//
// Passive checkpoints never hold the writer. A writer that commits without a pause leaves the log
// never quite copied, so it is never started again and grows: past `restart_frames` the writer
// copies the rest itself after a commit (the frames since the thread's last round) and its next
// write starts the log from its beginning. At twice the bound it waits for the thread's round
// to end first, so the log never exceeds that.

#include <sqlite3.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <mutex>
#include <thread>

#include "ramguard/base/result.hpp"

namespace ramguard {

struct WalCheckpointOptions {
  int threshold_frames = 1000;  // SQLite's own default for automatic checkpoints
  // 64 MiB of log at 4 KiB pages: the writer finishes it. Each time costs the writer two
  // fdatasyncs; in marks_bench (8 coordinators marking without a pause) a bound of 4,000 took
  // the p99 from ~1.1 ms to ~4 ms, 16,000 to 1.3-4 ms, varying with the disk.
  int restart_frames = 16000;
};

class WalCheckpointer {
 public:
  // Opens a second connection to `file` and takes over `writer`'s checkpoints: from now on its
  // commits only tell this object how long the log is. `writer` must outlive this object and be
  // used on one thread (the one that destroys this object).
  static Result<std::unique_ptr<WalCheckpointer>> start(sqlite3* writer,
                                                        const std::filesystem::path& file,
                                                        WalCheckpointOptions options = {});
  ~WalCheckpointer();  // stops the thread and gives `writer` back its automatic checkpoints
  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;

  std::uint64_t checkpoints() const { return checkpoints_.load(); }  // passive ones done
  // Checkpoints the writer ran itself past restart_frames.
  std::uint64_t writer_checkpoints() const { return writer_checkpoints_.load(); }

 private:
  WalCheckpointer(sqlite3* writer, sqlite3* own, std::filesystem::path file,
                  WalCheckpointOptions options);
  static int on_commit(void* self, sqlite3* db, const char* schema, int frames);
  void run();
  bool due() const;  // with mutex_ held
  int checkpoint();  // the log's length in frames, or -1 when it failed (logged)

  sqlite3* writer_;
  sqlite3* own_;
  std::filesystem::path file_;
  WalCheckpointOptions options_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable round_ended_;
  bool in_round_ = false;  // the thread is checkpointing
  int frames_ = 0;         // the log's length after the writer's last commit
  int done_frames_ = 0;    // the log's length at the end of the last checkpoint
  bool stopping_ = false;
  std::atomic<std::uint64_t> checkpoints_{0};
  std::atomic<std::uint64_t> writer_checkpoints_{0};
  std::thread thread_;
};

}  // namespace ramguard
