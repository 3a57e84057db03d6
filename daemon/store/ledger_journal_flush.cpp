// The journal's side of LedgerJournal: write now or keep in memory, write what waited once the
// store takes writes again, and take back a rolled-back batch's writes.
#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "common/log.hpp"
#include "store/ledger_journal.hpp"

namespace ramguard {

Status LedgerJournal::write(const std::string& run_id, const char* what,
                            std::function<Status()> apply) {
  PendingWrite pending{run_id, what, std::move(apply)};
  // Nothing may overtake what waits: a newer write goes to the store only once the journal is
  // empty.
  if (drain()) {
    Status status = ok_status();
    switch (attempt(pending, status)) {
      case Attempt::kWritten:
      case Attempt::kRefused:  // a bad write (not the disk): the caller hears why
        return status;
      case Attempt::kLater:
        break;
    }
    // Read-only since startup: the journal could never be written; say so and keep nothing.
    if (store_.opened_read_only()) return status;
  }
  pending_.push_back(std::move(pending));
  ++journalled_since_flush_;
  changed();
  return Error{unstored_note()};
}

LedgerJournal::Attempt LedgerJournal::attempt(PendingWrite& write, Status& status) {
  status = store_.join_batch(write.run_id);
  if (!status) {  // the open batch was rolled back: wait for its end
    failed_to_write();
    return Attempt::kLater;
  }
  status = write.apply();
  if (status) {
    if (store_.batch_open()) in_batch_.push_back(std::move(write));
    return Attempt::kWritten;
  }
  // Storage failures degrade the store; anything else (a constraint) will never be written.
  if (store_.writable()) return Attempt::kRefused;
  failed_to_write();
  return Attempt::kLater;
}

void LedgerJournal::failed_to_write() {
  retry_due_ = false;
  flush_limit_ = 1;
}

bool LedgerJournal::flush_pending() {
  retry_due_ = true;
  const std::size_t before = pending_.size();
  const bool drained = drain();
  if (pending_.size() != before) changed();
  return drained;
}

bool LedgerJournal::drain_at_stop() {
  // Each round: a probe, then (once it is durable) the rest.
  for (int round = 0; round < 3 && behind(); ++round) {
    (void)flush_pending();
    (void)store_.commit_batch();
  }
  return !behind();
}

void LedgerJournal::write_at_stop() {
  if (!behind()) return;
  const std::size_t held = pending_.size();
  if (drain_at_stop()) {
    log::info("store.journal_written_at_stop", {{"writes", held}, {"reserve_used", false}});
    return;
  }
  // The disk is still full: the reserve kept for this moment makes room.
  if (store_.release_reserve() && drain_at_stop()) {
    log::info("store.journal_written_at_stop", {{"writes", held}, {"reserve_used", true}});
    return;
  }
  // What is left is lost with the process. The run ends go first, ahead of the writes before
  // them: a restart that found such a run active would resume it, and report its process's
  // later exit as the run's.
  std::map<std::string, std::size_t> by_kind;
  std::set<std::string> runs;
  std::size_t ends_written = 0;
  std::deque<PendingWrite> left;
  left.swap(pending_.entries());  // out of the journal: a rolled-back batch may touch it
  for (PendingWrite& write : left) {
    ++by_kind[write.what];
    if (!write.run_id.empty()) runs.insert(write.run_id);
    if (write.what != std::string_view("run end")) continue;
    if (store_.join_batch(write.run_id) && write.apply() && store_.commit_batch()) ++ends_written;
  }
  std::string kinds;
  for (const auto& [what, count] : by_kind) {
    kinds += (kinds.empty() ? "" : ", ") + std::to_string(count) + " " + what;
  }
  std::string run_ids;
  for (const std::string& id : runs) {
    if (run_ids.size() > 200) {
      run_ids += " ...";
      break;
    }
    run_ids += (run_ids.empty() ? "" : " ") + id;
  }
  log::error("store.journal_dropped",
             {{"writes", left.size() - ends_written},
              {"kinds", kinds},
              {"runs", run_ids},
              {"run_ends_written", ends_written},
              {"reservations_unsaved", unsaved_reservations_.has_value()},
              {"reason", store_.unwritable_reason()},
              {"effect",
               "the daemon stops with the disk still full: these writes are not in the "
               "ledger; runs whose end was written are ended without their last marks"}});
}

bool LedgerJournal::drain() {
  if (store_.opened_read_only()) return pending_.empty();
  if (!pending_.empty() && !retry_due_) return false;
  std::uint64_t written = 0;
  while (!pending_.empty()) {
    if (written >= flush_limit_) {  // a probe: the rest once it is durable
      retry_due_ = false;
      return false;
    }
    Status status = ok_status();
    switch (attempt(pending_.front(), status)) {
      case Attempt::kWritten:
        ++written;
        ++replayed_in_batch_;
        pending_.pop_front();
        if (!store_.batch_open()) flush_limit_ = SIZE_MAX;  // durable already: no probe needed
        break;
      case Attempt::kRefused:
        pending_.refused(pending_.front(), status.error().message);
        pending_.pop_front();
        break;
      case Attempt::kLater:
        return false;
    }
  }
  // Without group commit each write was durable at once.
  if (written > 0 && !store_.batch_open()) batch_ended(true);
  if (unsaved_reservations_) {
    std::vector<Reservation> rows = std::move(*unsaved_reservations_);
    unsaved_reservations_.reset();
    if (!write_reservations(rows) && !store_.writable()) {
      unsaved_reservations_ = std::move(rows);
      failed_to_write();
      return false;
    }
  }
  return true;
}

void LedgerJournal::batch_ended(bool committed) {
  std::vector<PendingWrite> writes = std::move(in_batch_);
  in_batch_.clear();
  const std::uint64_t replayed = std::exchange(replayed_in_batch_, 0);
  if (committed) {
    if (replayed > 0) {  // a probe reached the file: write the rest at the next chance
      flush_limit_ = SIZE_MAX;
      retry_due_ = true;
    }
    if (replayed > 0 && pending_.empty()) {
      log::info("store.journal_written",
                {{"journalled", journalled_since_flush_}, {"dropped_total", pending_.dropped()}});
      journalled_since_flush_ = 0;
      (void)store_.keep_reserve();  // made again if a full disk took it
    }
    return;
  }
  // Rolled back at its commit (disk full, fsync error): its writes come before all that waits.
  journalled_since_flush_ += writes.size() - std::min<std::uint64_t>(replayed, writes.size());
  pending_.push_front(std::move(writes));
  if (!store_.opened_read_only()) unsaved_reservations_ = last_reservations_;
  failed_to_write();
  changed();
}

std::string LedgerJournal::unstored_note() const {
  if (pending_.empty() && store_.writable() && !store_.opened_read_only()) {
    // A run end after writes that waited: they are written now, unless the journal dropped some.
    std::string note =
        "not every earlier write of this run reached the ledger when it was made; "
        "nothing waits in the journal now";
    if (pending_.dropped() > 0) {
      note += " (" + std::to_string(pending_.dropped()) +
              " writes were dropped from a full journal since the daemon started)";
    }
    return note;
  }
  std::string note = "the ledger cannot take writes (" +
                     (store_.unwritable_reason().empty() ? std::string("a rolled-back batch")
                                                         : store_.unwritable_reason()) +
                     "): ";
  if (store_.opened_read_only()) return note + "opened read-only, nothing is journalled";
  note += std::to_string(pending_.size()) + " writes are journalled in memory and written in " +
          "order when it can";
  if (pending_.dropped() > 0) {
    note += "; the journal is full (" + std::to_string(pending_.max_entries()) +
            " writes): " + std::to_string(pending_.dropped()) + " older writes were dropped";
  }
  return note;
}

}  // namespace ramguard
