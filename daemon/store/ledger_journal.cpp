#include "store/ledger_journal.hpp"

#include <algorithm>
#include <map>
#include <string_view>
#include <vector>

namespace ramguard {

Status LedgerJournal::run_started(const RunLedger& ledger) {
  if (auto s = store_.join_batch(ledger.info.run_id); !s) return s;
  return store_.begin_run(ledger);
}

Status LedgerJournal::marked(const RunLedger& ledger, const MarkRecord& mark,
                             const PhaseRecord* phase, const BoundaryRecord* boundary) {
  const std::string& id = ledger.info.run_id;
  if (auto s = store_.join_batch(id); !s) return s;
  return store_.atomically([&]() -> Status {
    if (auto s = store_.append_mark(id, mark); !s) return s;
    if (phase != nullptr) {
      if (auto s = store_.save_phase(id, *phase); !s) return s;
    }
    if (boundary != nullptr) {
      if (auto s = store_.save_boundary(id, *boundary); !s) return s;
    }
    return store_.update_progress(id, ledger.peak_bytes, ledger.peak_exact, ledger.last);
  });
}

Status LedgerJournal::boundary_settled(const RunLedger& ledger, const BoundaryRecord& boundary) {
  if (auto s = store_.join_batch(ledger.info.run_id); !s) return s;
  return store_.save_boundary(ledger.info.run_id, boundary);
}

Status LedgerJournal::verdict(const RunLedger& ledger, const Verdict& verdict) {
  if (auto s = store_.join_batch(ledger.info.run_id); !s) return s;
  return store_.save_verdict(ledger.info.run_id, verdict);
}

Status LedgerJournal::progress(const RunLedger& ledger, const ProgressSample& sample) {
  const StoredSample row{sample.at_unix_ms,    sample.rss_bytes,  sample.min_rss_bytes,
                         sample.max_rss_bytes, sample.anon_bytes, sample.file_bytes};
  if (auto s = store_.join_batch(ledger.info.run_id); !s) return s;
  return store_.atomically([&]() -> Status {
    if (auto s = store_.append_samples(ledger.info.run_id, std::span(&row, 1)); !s) return s;
    if (ledger.state != RunState::kActive) return ok_status();
    return store_.update_progress(ledger.info.run_id, ledger.peak_bytes, ledger.peak_exact,
                                  ledger.last);
  });
}

Status LedgerJournal::run_finished(const RunLedger& ledger,
                                   const std::vector<const PhaseRecord*>& closed_phases) {
  const std::string& id = ledger.info.run_id;
  if (auto s = store_.join_batch(id); !s) return s;
  return store_.atomically([&]() -> Status {
    for (const PhaseRecord* phase : closed_phases) {
      if (auto s = store_.save_phase(id, *phase); !s) return s;
    }
    if (!ledger.marks.empty() && ledger.marks.back().kind == MarkKind::kRunEnd) {
      if (auto s = store_.append_mark(id, ledger.marks.back()); !s) return s;
    }
    return store_.end_run(id, ledger.state, ledger.ended.value_or(ledger.last.at),
                          ledger.peak_bytes, ledger.last, ledger.peak_exact);
  });
}

// Rows that are no longer current are deleted, including rows restored after a restart.
// Writes the difference from what is stored, not the whole table: an admission or release
// costs one row, however many reservations are open.
Status LedgerJournal::reservations(const std::vector<ReservationRow>& rows, std::uint64_t) {
  // A lost batch may have held reservation rows this cache counts as stored.
  if (store_.batches_lost() != batches_lost_seen_) {
    batches_lost_seen_ = store_.batches_lost();
    stored_reservations_.reset();
  }
  if (!stored_reservations_) {
    auto stored = store_.load_reservations();
    if (!stored) return stored.error();
    stored_reservations_.emplace();
    for (StoredReservation& r : *stored) {
      std::string id = r.id;
      stored_reservations_->emplace(std::move(id), std::move(r));
    }
  }
  // Called at every admission and release: the difference is found without copying the
  // rows that did not change.
  auto& stored = *stored_reservations_;
  std::map<std::string_view, const ReservationRow*> current;
  for (const ReservationRow& r : rows) current.emplace(r.reservation_id, &r);
  std::vector<std::string> gone;
  std::vector<StoredReservation> changed;
  for (const auto& [id, old] : stored) {
    if (current.find(id) == current.end()) gone.push_back(id);
  }
  for (const auto& [id, r] : current) {
    StoredReservation row{r->reservation_id,  r->job,       r->bytes, r->run_id, r->created_wall_ms,
                          r->expires_wall_ms, r->owner_uid, r->source};
    auto old = stored.find(r->reservation_id);
    if (old == stored.end() || !(old->second == row)) changed.push_back(std::move(row));
  }
  if (gone.empty() && changed.empty()) return ok_status();
  Status written = store_.atomically([&]() -> Status {
    for (const std::string& id : gone) {
      if (auto s = store_.delete_reservation(id); !s) return s;
    }
    for (const StoredReservation& row : changed) {
      if (auto s = store_.save_reservation(row); !s) return s;
    }
    return ok_status();
  });
  // After a failed transaction what is stored is unknown: read it again next time.
  if (!written.ok()) {
    stored_reservations_.reset();
    return written;
  }
  for (const std::string& id : gone) stored.erase(id);
  for (StoredReservation& row : changed) {
    std::string id = row.id;
    stored.insert_or_assign(std::move(id), std::move(row));
  }
  return written;
}

Result<std::vector<RunLedger>> LedgerJournal::load_active_runs() {
  return store_.load_active_runs();
}

Result<std::vector<ReservationRow>> LedgerJournal::load_reservations() {
  auto stored = store_.load_reservations();
  if (!stored) return stored.error();
  std::vector<ReservationRow> rows;
  for (const StoredReservation& r : *stored) {
    rows.push_back({r.id, r.job, r.bytes, r.run_id, r.owner_uid, r.created_wall_ms,
                    r.expires_wall_ms, r.source});
  }
  return rows;
}

}  // namespace ramguard
