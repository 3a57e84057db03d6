#pragma once
// Writes the daemon accepted while the ledger could not take them (full or failing disk): kept
// in memory, in order, until the store is writable again, so that nothing acknowledged is lost
// to a full disk. Bounded: past max_entries the oldest write is dropped and counted, and the
// first drop is logged (then at most one line a minute), so a disk that stays full costs a
// known amount of memory, never all of it.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "ramguard/base/result.hpp"

namespace ramguard {

// The default bound. A mark's write (mark, phase, boundary, progress) holds about 1 KB, so
// 65,536 writes stay under ~64 MB: 16 runs marking every second for more than an hour, within
// the memory the shipped unit gives the daemon (MemoryMax=512M) beside its runs.
inline constexpr std::size_t kDefaultPendingWrites = 65'536;

struct PendingWrite {
  std::string run_id;             // whose write it is; empty for daemon-wide rows
  std::string what;               // "mark", "run start", ...: for the log
  std::function<Status()> apply;  // writes the record (copied in) to the store
};

class PendingWrites {
 public:
  explicit PendingWrites(std::size_t max_entries = kDefaultPendingWrites)
      : max_entries_(max_entries == 0 ? 1 : max_entries) {}

  // Appends; drops the oldest when full.
  void push_back(PendingWrite write);
  // Writes that were in a rolled-back batch: they came before every pending one.
  void push_front(std::vector<PendingWrite> writes);
  // A journalled write the store refused for a reason other than storage (a constraint): it
  // can never be written, so it counts as dropped.
  void refused(const PendingWrite& write, const std::string& reason);

  bool empty() const { return writes_.empty(); }
  std::size_t size() const { return writes_.size(); }
  PendingWrite& front() { return writes_.front(); }
  std::deque<PendingWrite>& entries() { return writes_; }
  void pop_front() { writes_.pop_front(); }
  std::size_t max_entries() const { return max_entries_; }
  std::uint64_t dropped() const { return dropped_; }  // since the daemon started
  void set_max_entries(std::size_t max_entries);

 private:
  void trim();

  std::size_t max_entries_;
  std::deque<PendingWrite> writes_;
  std::uint64_t dropped_ = 0;
  std::uint64_t unlogged_drops_ = 0;
  std::chrono::steady_clock::time_point last_logged_{};
};

}  // namespace ramguard
