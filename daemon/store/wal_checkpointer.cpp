#include "store/wal_checkpointer.hpp"

#include <algorithm>
#include <chrono>
#include <string>

#include "common/log.hpp"

namespace ramguard {
namespace {

// After a failed checkpoint (disk full, I/O error) the next one waits this long: a failing disk
// gets one attempt a second, not one per commit.
constexpr std::chrono::seconds kRetryAfterFailure{1};
// What the writer gets back when the thread stops: SQLite's default automatic checkpoint.
constexpr int kSqliteAutocheckpointFrames = 1000;

}  // namespace

Result<std::unique_ptr<WalCheckpointer>> WalCheckpointer::start(sqlite3* writer,
                                                                const std::filesystem::path& file,
                                                                WalCheckpointOptions options) {
  sqlite3* own = nullptr;
  const int rc =
      sqlite3_open_v2(file.c_str(), &own, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Error e{"opening a checkpoint connection to " + file.string() + ": " +
            (own != nullptr ? sqlite3_errmsg(own) : sqlite3_errstr(rc))};
    sqlite3_close(own);
    return e;
  }
  // Only checkpoints: no lookaside slots (120 KiB per connection by default) and a tiny page
  // cache, as the daemon's footprint is budgeted (16 MB at 1,000 targets).
  sqlite3_db_config(own, SQLITE_DBCONFIG_LOOKASIDE, nullptr, 0, 0);
  // SQLite opens lazily: until this connection has read the file it does not know the file is
  // in WAL mode, and its checkpoints do nothing.
  char* message = nullptr;
  if (sqlite3_exec(own, "PRAGMA cache_size = -64; SELECT count(*) FROM sqlite_master", nullptr,
                   nullptr, &message) != SQLITE_OK) {
    Error e{"reading " + file.string() +
            " from a checkpoint connection: " + (message != nullptr ? message : "unknown error")};
    sqlite3_free(message);
    sqlite3_close(own);
    return e;
  }
  return std::unique_ptr<WalCheckpointer>(new WalCheckpointer(writer, own, file, options));
}

WalCheckpointer::WalCheckpointer(sqlite3* writer, sqlite3* own, std::filesystem::path file,
                                 WalCheckpointOptions options)
    : writer_(writer), own_(own), file_(std::move(file)), options_(options) {
  // Replaces the automatic checkpoint, which SQLite implements as this same hook.
  sqlite3_wal_hook(writer_, &WalCheckpointer::on_commit, this);
  thread_ = std::thread([this] { run(); });
}

WalCheckpointer::~WalCheckpointer() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_one();
  thread_.join();
  log::info("store.checkpoints", {{"file", file_.string()},
                                  {"on_thread", checkpoints_.load()},
                                  {"by_writer", writer_checkpoints_.load()}});
  sqlite3_wal_autocheckpoint(writer_, kSqliteAutocheckpointFrames);
  sqlite3_close(own_);
}

int WalCheckpointer::on_commit(void* self, sqlite3* db, const char* /*schema*/, int frames) {
  auto* checkpointer = static_cast<WalCheckpointer*>(self);
  bool due = false;
  {
    std::lock_guard lock(checkpointer->mutex_);
    checkpointer->frames_ = frames;
    // Shorter than at the last checkpoint: the writer started the log from its beginning.
    if (frames < checkpointer->done_frames_) checkpointer->done_frames_ = 0;
    due = checkpointer->due();
  }
  if (due) checkpointer->wake_.notify_one();
  if (frames >= checkpointer->options_.restart_frames) {
    // The thread fell behind a writer that never pauses, so the log never gets a moment to be
    // fully copied and started again. Between two of its own transactions the writer copies
    // what is left (the frames since the thread's last round) and its next write starts the log
    // from its beginning. The thread starts no round past the bound; one under way makes this
    // busy, and the next commit tries again, or, at twice the bound, waits for it to end.
    if (frames >= 2 * checkpointer->options_.restart_frames) {
      std::unique_lock lock(checkpointer->mutex_);
      checkpointer->round_ended_.wait(lock, [checkpointer] { return !checkpointer->in_round_; });
    }
    if (sqlite3_wal_checkpoint_v2(db, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr) ==
        SQLITE_OK) {
      checkpointer->writer_checkpoints_.fetch_add(1);
    }
  }
  return SQLITE_OK;
}

bool WalCheckpointer::due() const {
  // A round for every quarter threshold of new frames, not for every commit: under a steady
  // stream of commits each round has two fdatasyncs to share. Past restart_frames the writer
  // finishes the log, and a round would only make its attempt busy.
  return frames_ >= options_.threshold_frames && frames_ < options_.restart_frames &&
         frames_ >= done_frames_ + std::max(1, options_.threshold_frames / 4);
}

void WalCheckpointer::run() {
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return stopping_ || due(); });
    if (stopping_) return;
    const int seen_frames = frames_;
    in_round_ = true;
    lock.unlock();
    const int log_frames = checkpoint();
    lock.lock();
    in_round_ = false;
    round_ended_.notify_all();
    const bool ok = log_frames >= 0;
    // Done up to what it saw: the next round waits for a commit that makes the log longer.
    done_frames_ = std::max(seen_frames, log_frames);
    if (!ok) wake_.wait_for(lock, kRetryAfterFailure, [this] { return stopping_; });
  }
}

int WalCheckpointer::checkpoint() {
  int log_frames = 0;
  int copied_frames = 0;
  const int rc = sqlite3_wal_checkpoint_v2(own_, nullptr, SQLITE_CHECKPOINT_PASSIVE, &log_frames,
                                           &copied_frames);
  if (rc == SQLITE_OK) {
    checkpoints_.fetch_add(1);
    return std::max(log_frames, 0);
  }
  // Busy: the writer is finishing the log itself, or an operator's sqlite3 shell checkpoints.
  if (rc == SQLITE_BUSY) return std::max(log_frames, 0);
  log::warning("store.checkpoint_failed",
               {{"file", file_.string()},
                {"reason", std::string(sqlite3_errmsg(own_))},
                {"effect", "the write-ahead log grows until a checkpoint succeeds"}});
  return -1;
}

}  // namespace ramguard
