#include "store/store_reader.hpp"

#include <sqlite3.h>

#include "store/ledger_queries.hpp"
#include "store/sqlite_db.hpp"

namespace ramguard {

Result<std::unique_ptr<StoreReader>> StoreReader::start(const std::filesystem::path& file) {
  // No check, no migration: the writer's connection did both.
  auto db = SqliteDb::open_read_only(file);
  if (!db) return db.error();
  // Reads only: no lookaside slots (120 KiB per connection by default); the page cache is the
  // writer's size, so the daemon's footprint stays what is budgeted.
  sqlite3_db_config((*db)->handle(), SQLITE_DBCONFIG_LOOKASIDE, nullptr, 0, 0);
  const std::string op = "opening a reading connection";
  if (auto s = (*db)->exec("PRAGMA busy_timeout = 2000; PRAGMA cache_size = -512", op); !s) {
    return s.error();
  }
  auto version = (*db)->scalar_int64("PRAGMA user_version", op);
  if (!version) return version.error();
  return std::unique_ptr<StoreReader>(new StoreReader(std::move(*db), *version));
}

StoreReader::StoreReader(std::unique_ptr<SqliteDb> db, std::int64_t schema_version)
    : db_(std::move(db)), ledger_(std::make_unique<LedgerQueries>(*db_, schema_version)) {
  thread_ = std::thread([this] { run(); });
}

StoreReader::~StoreReader() {
  std::deque<Job> dropped;
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    dropped.swap(jobs_);
  }
  wake_.notify_one();
  thread_.join();
  // `dropped` goes here, on this thread: a job's hand-back may own the loop's waiting handler.
}

void StoreReader::post(Job job) {
  {
    std::lock_guard lock(mutex_);
    jobs_.push_back(std::move(job));
  }
  wake_.notify_one();
}

std::size_t StoreReader::jobs_waiting() const {
  std::lock_guard lock(mutex_);
  return jobs_.size();
}

void StoreReader::run() {
  for (;;) {
    Job job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [this] { return stopping_ || !jobs_.empty(); });
      if (stopping_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job(*ledger_);
  }
}

}  // namespace ramguard
