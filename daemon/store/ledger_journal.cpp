#include "store/ledger_journal.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace ramguard {

LedgerJournal::LedgerJournal(Store& store, std::size_t max_pending_writes)
    : store_(store), pending_(max_pending_writes) {
  store_.set_batch_ended_listener([this](bool committed) { batch_ended(committed); });
}

LedgerJournal::~LedgerJournal() {
  store_.set_batch_ended_listener({});
}

// Each write copies its records into the closure: journalled, it outlives the call.
Status LedgerJournal::run_started(const RunLedger& ledger) {
  return write(ledger.info.run_id, "run start",
               [this, started = ledger] { return store_.begin_run(started); });
}

Status LedgerJournal::marked(const RunLedger& ledger, const MarkRecord& mark,
                             const PhaseRecord* phase, const BoundaryRecord* boundary) {
  const std::string& id = ledger.info.run_id;
  std::optional<PhaseRecord> phase_row;
  if (phase != nullptr) phase_row = *phase;
  std::optional<BoundaryRecord> boundary_row;
  if (boundary != nullptr) boundary_row = *boundary;
  return write(
      id, "mark",
      [this, id, mark, phase_row = std::move(phase_row), boundary_row = std::move(boundary_row),
       peak = ledger.peak_bytes, exact = ledger.peak_exact, last = ledger.last] {
        return store_.atomically([&]() -> Status {
          if (auto s = store_.append_mark(id, mark); !s) return s;
          if (phase_row) {
            if (auto s = store_.save_phase(id, *phase_row); !s) return s;
          }
          if (boundary_row) {
            if (auto s = store_.save_boundary(id, *boundary_row); !s) return s;
          }
          return store_.update_progress(id, peak, exact, last);
        });
      });
}

Status LedgerJournal::boundary_settled(const RunLedger& ledger, const BoundaryRecord& boundary) {
  const std::string& id = ledger.info.run_id;
  return write(id, "boundary", [this, id, boundary] { return store_.save_boundary(id, boundary); });
}

Status LedgerJournal::verdict(const RunLedger& ledger, const Verdict& verdict) {
  const std::string& id = ledger.info.run_id;
  return write(id, "verdict", [this, id, verdict] { return store_.save_verdict(id, verdict); });
}

Status LedgerJournal::census(const RunLedger& ledger, const CensusRecord& census) {
  const std::string& id = ledger.info.run_id;
  return write(id, "census", [this, id, census] { return store_.save_census(id, census); });
}

Status LedgerJournal::progress(const RunLedger& ledger, const ProgressSample& sample) {
  const std::string& id = ledger.info.run_id;
  return write(id, "progress",
               [this, id, row = sample, active = ledger.state == RunState::kActive,
                peak = ledger.peak_bytes, exact = ledger.peak_exact, last = ledger.last] {
                 return store_.atomically([&]() -> Status {
                   if (auto s = store_.append_samples(id, std::span(&row, 1)); !s) return s;
                   if (!active) return ok_status();
                   return store_.update_progress(id, peak, exact, last);
                 });
               });
}

Status LedgerJournal::peak_revised(const RunLedger& ledger) {
  const std::string& id = ledger.info.run_id;
  return write(id, "peak",
               [this, id, peak = ledger.peak_bytes, exact = ledger.peak_exact, last = ledger.last] {
                 return store_.update_progress(id, peak, exact, last);
               });
}

Status LedgerJournal::run_finished(const RunLedger& ledger,
                                   const std::vector<const PhaseRecord*>& closed_phases) {
  const std::string& id = ledger.info.run_id;
  std::vector<PhaseRecord> phases;
  for (const PhaseRecord* phase : closed_phases) phases.push_back(*phase);
  std::optional<MarkRecord> end_mark;
  if (!ledger.marks.empty() && ledger.marks.back().kind == MarkKind::kRunEnd) {
    end_mark = ledger.marks.back();
  }
  return write(id, "run end",
               [this, id, phases = std::move(phases), end_mark = std::move(end_mark),
                state = ledger.state, ended = ledger.ended.value_or(ledger.last.at),
                peak = ledger.peak_bytes, last = ledger.last, exact = ledger.peak_exact] {
                 return store_.atomically([&]() -> Status {
                   for (const PhaseRecord& phase : phases) {
                     if (auto s = store_.save_phase(id, phase); !s) return s;
                   }
                   if (end_mark) {
                     if (auto s = store_.append_mark(id, *end_mark); !s) return s;
                   }
                   return store_.end_run(id, state, ended, peak, last, exact);
                 });
               });
}

// The newest rows are all that matter: they wait behind the journal and replace older rows
// that waited.
Status LedgerJournal::reservations(const std::vector<Reservation>& rows, std::uint64_t) {
  last_reservations_ = rows;
  unsaved_reservations_.reset();
  if (!drain()) {
    if (!store_.opened_read_only()) unsaved_reservations_ = rows;
    return Error{"the ledger is behind: " + unstored_note()};
  }
  Status written = write_reservations(rows);
  if (!written && !store_.writable() && !store_.opened_read_only()) unsaved_reservations_ = rows;
  return written;
}

// Rows that are no longer current are deleted, including rows restored after a restart.
// Writes the difference from what is stored, not the whole table: an admission or release
// costs one row, however many reservations are open.
Status LedgerJournal::write_reservations(const std::vector<Reservation>& rows) {
  // A lost batch may have held reservation rows this cache counts as stored.
  if (store_.batches_lost() != batches_lost_seen_) {
    batches_lost_seen_ = store_.batches_lost();
    stored_reservations_.reset();
  }
  if (!stored_reservations_) {
    auto stored = store_.load_reservations();
    if (!stored) return stored.error();
    stored_reservations_.emplace();
    for (Reservation& r : *stored) {
      std::string id = r.id;
      stored_reservations_->emplace(std::move(id), std::move(r));
    }
  }
  // Called at every admission and release: the difference is found without copying the
  // rows that did not change.
  auto& stored = *stored_reservations_;
  std::map<std::string_view, const Reservation*> current;
  for (const Reservation& r : rows) current.emplace(r.id, &r);
  std::vector<std::string> gone;
  std::vector<Reservation> changed;
  for (const auto& [id, old] : stored) {
    if (current.find(id) == current.end()) gone.push_back(id);
  }
  for (const auto& [id, r] : current) {
    auto old = stored.find(r->id);
    if (old == stored.end() || !(old->second == *r)) changed.push_back(*r);
  }
  if (gone.empty() && changed.empty()) return ok_status();
  Status written = store_.atomically([&]() -> Status {
    for (const std::string& id : gone) {
      if (auto s = store_.delete_reservation(id); !s) return s;
    }
    for (const Reservation& row : changed) {
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
  for (Reservation& row : changed) {
    std::string id = row.id;
    stored.insert_or_assign(std::move(id), std::move(row));
  }
  return written;
}

Result<std::vector<RunLedger>> LedgerJournal::load_active_runs() {
  return store_.load_active_runs();
}

namespace {

// One run's records as the store streams them.
class StoredRecords final : public RunRecords {
 public:
  StoredRecords(Store& store, std::string run_id) : store_(store), run_id_(std::move(run_id)) {}
  Result<std::uint64_t> mark_count() override { return store_.mark_count(run_id_); }
  Status newest_marks(std::uint64_t count, const std::function<void(MarkRecord)>& take) override {
    return store_.stream_marks(run_id_, count, take);
  }
  Status phases(const std::function<void(PhaseRecord)>& take) override {
    return store_.stream_phases(run_id_, take);
  }
  Status boundaries(const std::function<void(BoundaryRecord)>& take) override {
    return store_.stream_boundaries(run_id_, take);
  }
  Status verdicts(const std::function<void(Verdict)>& take) override {
    return store_.stream_verdicts(run_id_, std::nullopt, take);
  }

 private:
  Store& store_;
  std::string run_id_;
};

}  // namespace

Status LedgerJournal::for_each_active_run(
    const std::function<Status(RunLedger head, RunRecords& records)>& resume) {
  return store_.for_each_active_run([&](RunLedger head) {
    StoredRecords records(store_, head.info.run_id);
    return resume(std::move(head), records);
  });
}

Result<std::vector<Reservation>> LedgerJournal::load_reservations() {
  return store_.load_reservations();
}

}  // namespace ramguard
