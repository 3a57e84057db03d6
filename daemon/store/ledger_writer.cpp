// The run-level writes; record writes are in ledger_writer_records.cpp, samples, censuses,
// reservations and retention in ledger_writer_side_tables.cpp, group commit in
// ledger_writer_batch.cpp.
#include "store/ledger_writer.hpp"

#include <sqlite3.h>

#include <chrono>

#include "store/codec.hpp"
#include "store/ledger_queries.hpp"
#include "store/sqlite_db.hpp"

namespace ramguard {

Status LedgerWriter::atomically(const std::function<Status()>& writes) {
  return in_transaction(db_, "writing to the ledger", writes);
}

Error LedgerWriter::write_error(const Error& e, const std::string& run_id) {
  if (db_.last_failure_code() == SQLITE_CONSTRAINT_FOREIGNKEY)
    return unknown_run(run_id, db_.path());
  return e;
}

Status LedgerWriter::insert_run(const RunLedger& l) {
  const std::string op = "storing run '" + l.info.run_id + "'";
  queries_.forget_job_peaks();  // a run stored already ended (an import) may be a peak on record
  // Parameters in kRunSelect's order.
  static const std::string kSql =
      "INSERT INTO runs (" + std::string(kRunSelect) +
      ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, "
      "?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36)";
  auto q = db_.query(kSql, op);
  if (!q) return q.error();
  const RunInfo& i = l.info;
  q->bind(1, i.run_id).bind(2, i.job).bind(3, static_cast<std::int64_t>(i.target.pid));
  q->bind(4, i.target.start_time_ticks).bind(5, i.owner_uid).bind(6, i.model_bytes);
  q->bind(7, i.declared_rounds).bind(8, i.hosts).bind(9, i.estimate_bytes).bind(10, i.plan);
  q->bind(11, i.reservation_id).bind(12, run_state_name(l.state));
  bind_instant(*q, 13, l.started);
  bind_instant(*q, 15, l.ended);
  q->bind(17, l.peak_bytes).bind(18, l.peak_exact);
  bind_reading(*q, 19, l.baseline);
  bind_reading(*q, 28, l.last);
  if (auto s = q->run(); !s) {
    if ((db_.last_failure_code() & 0xff) == SQLITE_CONSTRAINT) {
      return Error{"run '" + i.run_id + "' is already in " + db_.path().string()};
    }
    return s;
  }
  for (const auto& [key, value] : i.labels) {
    auto lq = db_.query("INSERT INTO run_labels (run_id, key, value) VALUES (?1, ?2, ?3)", op);
    if (!lq) return lq.error();
    if (auto s = lq->bind(1, i.run_id).bind(2, key).bind(3, value).run(); !s) return s;
  }
  if (i.scope != Scope::kProcess) {
    auto sq =
        db_.query("INSERT INTO run_scopes (run_id, scope, cgroup_dir) VALUES (?1, ?2, ?3)", op);
    if (!sq) return sq.error();
    if (auto s = sq->bind(1, i.run_id).bind(2, scope_name(i.scope)).bind(3, i.cgroup_dir).run(); !s)
      return s;
  }
  return ok_status();
}

Status LedgerWriter::begin_run(const RunLedger& l) {
  return in_transaction(db_, "storing run '" + l.info.run_id + "'", [&]() -> Status {
    if (auto s = insert_run(l); !s) return s;
    for (const auto& m : l.marks) {
      if (auto s = write_mark(l.info.run_id, m); !s) return s;
    }
    for (const auto& p : l.phases) {
      if (auto s = write_phase(l.info.run_id, p); !s) return s;
    }
    for (const auto& b : l.boundaries) {
      if (auto s = write_boundary(l.info.run_id, b); !s) return s;
    }
    for (const auto& v : l.verdicts) {
      if (auto s = write_verdict(l.info.run_id, v); !s) return s;
    }
    return ok_status();
  });
}

Status LedgerWriter::update_progress(const std::string& run_id, std::uint64_t peak_bytes,
                                     bool peak_exact, const MemoryReading& last) {
  const std::string op = "updating the progress of run '" + run_id + "'";
  auto q = db_.query(
      "UPDATE runs SET peak_bytes = ?2, peak_exact = ?3, last_mono_ns = ?4, last_wall_ns = ?5, "
      "last_source = ?6, last_rss = ?7, last_anon = ?8, last_file = ?9, last_shmem = ?10, "
      "last_swap = ?11, last_hwm = ?12 WHERE run_id = ?1",
      op);
  if (!q) return q.error();
  q->bind(1, run_id).bind(2, peak_bytes).bind(3, peak_exact);
  bind_reading(*q, 4, last);
  if (auto s = q->run(); !s) return s;
  if (db_.changes() == 0) return queries_.require_run(run_id, op.c_str());
  return ok_status();
}

Status LedgerWriter::end_run(const std::string& run_id, RunState state, const Instant& ended,
                             std::uint64_t peak_bytes, const MemoryReading& last, bool peak_exact) {
  const std::string op = "ending run '" + run_id + "'";
  if (state == RunState::kActive) {
    return Error{op + ": the final state must be ended, exited or lost, not active"};
  }
  queries_.forget_job_peaks();  // the run may now be its job's peak on record
  return in_transaction(db_, op, [&]() -> Status {
    if (auto s = update_progress(run_id, peak_bytes, peak_exact, last); !s) return s;
    auto q = db_.query(
        "UPDATE runs SET state = ?2, ended_mono_ns = ?3, ended_wall_ns = ?4 WHERE run_id = ?1", op);
    if (!q) return q.error();
    q->bind(1, run_id).bind(2, run_state_name(state));
    bind_instant(*q, 3, ended);
    return q->run();
  });
}

Status LedgerWriter::end_undecodable(const std::string& run_id) {
  const std::string op = "ending undecodable run '" + run_id + "' lost";
  queries_.forget_job_peaks();
  auto q = db_.query(
      "UPDATE runs SET state = 'lost', ended_mono_ns = ?2, ended_wall_ns = ?3 WHERE run_id = ?1",
      op);
  if (!q) return q.error();
  const auto mono = std::chrono::steady_clock::now().time_since_epoch();
  const auto wall = std::chrono::system_clock::now().time_since_epoch();
  q->bind(1, run_id)
      .bind(2, static_cast<std::int64_t>(std::chrono::nanoseconds(mono).count()))
      .bind(3, static_cast<std::int64_t>(std::chrono::nanoseconds(wall).count()));
  return q->run();
}

}  // namespace ramguard
