#include "store/pending_writes.hpp"

#include "common/log.hpp"

namespace ramguard {
namespace {

// As for an unwritable ledger: the first drop is an error line, then one reminder a minute.
constexpr std::chrono::seconds kRemindEvery{60};

}  // namespace

void PendingWrites::push_back(PendingWrite write) {
  writes_.push_back(std::move(write));
  trim();
}

void PendingWrites::push_front(std::vector<PendingWrite> writes) {
  for (auto it = writes.rbegin(); it != writes.rend(); ++it) writes_.push_front(std::move(*it));
  trim();
}

void PendingWrites::set_max_entries(std::size_t max_entries) {
  max_entries_ = max_entries == 0 ? 1 : max_entries;
  trim();
}

void PendingWrites::refused(const PendingWrite& write, const std::string& reason) {
  ++dropped_;
  log::warning("store.journal_write_refused",
               {{"run", write.run_id}, {"what", write.what}, {"reason", reason}});
}

void PendingWrites::trim() {
  if (writes_.size() <= max_entries_) return;
  const auto now = std::chrono::steady_clock::now();
  const bool first = dropped_ == 0;
  std::string oldest_run;
  while (writes_.size() > max_entries_) {
    oldest_run = writes_.front().run_id;
    writes_.pop_front();
    ++dropped_;
    ++unlogged_drops_;
  }
  if (!first && now - last_logged_ < kRemindEvery) return;
  log::error("store.journal_full",
             {{"max_entries", max_entries_},
              {"dropped", dropped_},
              {"since_last_line", unlogged_drops_},
              {"oldest_dropped_run", oldest_run},
              {"effect",
               "the oldest unstored writes are dropped for good; the newest are kept until the "
               "ledger is writable"}});
  last_logged_ = now;
  unlogged_drops_ = 0;
}

}  // namespace ramguard
