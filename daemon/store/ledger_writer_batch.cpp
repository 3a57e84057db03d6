// Group commit: the writes of one event-loop turn share one transaction. The control server
// commits the batch before it sends the replies of that turn, so a reply still never says
// "stored" before its record is durable; only the fsync and the lock traffic are shared.
#include <algorithm>
#include <utility>

#include "common/log.hpp"
#include "store/ledger_queries.hpp"
#include "store/ledger_writer.hpp"
#include "store/sqlite_db.hpp"

namespace ramguard {

Status LedgerWriter::join_batch(std::string_view run_id) {
  if (!batching_) return ok_status();
  if (batch_open_ && !db_.in_transaction()) {
    // SQLite rolled the batch back by itself (disk full, I/O error inside a write): the earlier
    // writes are gone. Leave it for commit_batch() to report; new writes commit on their own.
    return Error{"the ledger batch of " + db_.path().string() + " was rolled back"};
  }
  if (!run_id.empty() &&
      std::find(batch_runs_.begin(), batch_runs_.end(), run_id) == batch_runs_.end()) {
    batch_runs_.emplace_back(run_id);
  }
  if (batch_open_ || db_.in_transaction()) return ok_status();
  if (auto s = db_.begin("opening a ledger batch"); !s) return s;
  batch_open_ = true;
  if (batch_opened_) batch_opened_();
  return ok_status();
}

Status LedgerWriter::commit_batch() {
  if (!batch_open_) return ok_status();
  batch_open_ = false;
  std::vector<std::string> runs = std::move(batch_runs_);
  batch_runs_.clear();
  Status committed = ok_status();
  if (!db_.in_transaction()) {
    committed =
        Error{"the ledger batch of " + db_.path().string() + " was rolled back by a failed write"};
  } else if (std::exchange(fail_next_commit_, false)) {
    committed = Error{"committing a ledger batch of " + db_.path().string() + ": failure injected"};
  } else {
    committed = db_.commit("committing a ledger batch");
  }
  if (committed) {
    ++batches_committed_;
    if (batch_ended_) batch_ended_(true);
    return committed;
  }
  db_.rollback();
  ++batches_lost_;
  queries_.forget_job_peaks();  // a run end in the batch may have changed them; it is gone now
  log::debug("store.batch_lost",
             {{"runs", std::to_string(runs.size())}, {"reason", committed.error().message}});
  if (batch_ended_) batch_ended_(false);
  if (batch_lost_) batch_lost_(runs, committed.error());
  return committed;
}

}  // namespace ramguard
