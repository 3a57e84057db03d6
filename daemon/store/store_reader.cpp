#include "store/store_reader.hpp"

#include "store/store.hpp"

namespace ramguard {

Result<std::unique_ptr<StoreReader>> StoreReader::start(const std::filesystem::path& file) {
  auto ledger = Store::open_reader(file);
  if (!ledger) return ledger.error();
  return std::unique_ptr<StoreReader>(new StoreReader(std::move(*ledger)));
}

StoreReader::StoreReader(std::unique_ptr<Store> ledger) : ledger_(std::move(ledger)) {
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
