// Writes of a run's records: marks (append-only), phases, boundaries and verdicts (upserts).
#include <sqlite3.h>

#include "store/codec.hpp"
#include "store/ledger_queries.hpp"
#include "store/ledger_writer.hpp"
#include "store/sqlite_db.hpp"

namespace ramguard {

Status LedgerWriter::write_mark(const std::string& run_id, const MarkRecord& m) {
  const std::string op = "appending mark " + std::to_string(m.seq) + " to run '" + run_id + "'";
  static const std::string kSql = "INSERT INTO marks (run_id, seq, kind, phase, round, " +
                                  std::string(kRecordFactsSelect) +
                                  ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                                  "?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22)";
  auto q = db_.query(kSql, op);
  if (!q) return q.error();
  q->bind(1, run_id).bind(2, m.seq).bind(3, mark_kind_name(m.kind)).bind(4, m.phase);
  q->bind(5, m.round);
  bind_reading(*q, 6, m.reading);
  bind_allocator(*q, 15, m.allocator);
  bind_gc(*q, 19, m.gc);
  if (auto s = q->run(); !s) {
    if (db_.last_failure_code() == SQLITE_CONSTRAINT_PRIMARYKEY) {
      return Error{"mark " + std::to_string(m.seq) + " of run '" + run_id + "' is already in " +
                   db_.path().string() + " (mark seqs must be new)"};
    }
    return write_error(s.error(), run_id);
  }
  return ok_status();
}

Status LedgerWriter::write_phase(const std::string& run_id, const PhaseRecord& p) {
  const std::string op = "saving phase '" + p.phase + "' of round " + std::to_string(p.round) +
                         " of run '" + run_id + "'";
  auto q = db_.query(
      "INSERT INTO phases (run_id, phase, round, begin_mono_ns, begin_wall_ns, end_mono_ns, "
      "end_wall_ns, peak_bytes, peak_exact) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) "
      "ON CONFLICT (run_id, phase, round, begin_mono_ns) DO UPDATE SET "
      "begin_wall_ns = excluded.begin_wall_ns, end_mono_ns = excluded.end_mono_ns, "
      "end_wall_ns = excluded.end_wall_ns, peak_bytes = excluded.peak_bytes, "
      "peak_exact = excluded.peak_exact",
      op);
  if (!q) return q.error();
  q->bind(1, run_id).bind(2, p.phase).bind(3, p.round);
  bind_instant(*q, 4, p.begin);
  bind_instant(*q, 6, p.end);
  q->bind(8, p.peak_bytes).bind(9, p.peak_exact);
  if (auto s = q->run(); !s) return write_error(s.error(), run_id);
  return ok_status();
}

Status LedgerWriter::write_boundary(const std::string& run_id, const BoundaryRecord& b) {
  const std::string op =
      "saving the boundary of round " + std::to_string(b.round) + " of run '" + run_id + "'";
  auto q = db_.query(
      "INSERT INTO boundaries (run_id, round, r_mono_ns, r_wall_ns, r_source, r_rss, r_anon, "
      "r_file, r_shmem, r_swap, r_hwm, floor_bytes, settled, alloc_allocated, alloc_active, "
      "alloc_resident, alloc_retained, gc_rss_before, gc_rss_after, gc_collected, gc_duration_s) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, "
      "?19, ?20, ?21) ON CONFLICT (run_id, round) DO UPDATE SET "
      "r_mono_ns = excluded.r_mono_ns, r_wall_ns = excluded.r_wall_ns, "
      "r_source = excluded.r_source, r_rss = excluded.r_rss, r_anon = excluded.r_anon, "
      "r_file = excluded.r_file, r_shmem = excluded.r_shmem, r_swap = excluded.r_swap, "
      "r_hwm = excluded.r_hwm, floor_bytes = excluded.floor_bytes, settled = excluded.settled, "
      "alloc_allocated = excluded.alloc_allocated, alloc_active = excluded.alloc_active, "
      "alloc_resident = excluded.alloc_resident, alloc_retained = excluded.alloc_retained, "
      "gc_rss_before = excluded.gc_rss_before, gc_rss_after = excluded.gc_rss_after, "
      "gc_collected = excluded.gc_collected, gc_duration_s = excluded.gc_duration_s",
      op);
  if (!q) return q.error();
  q->bind(1, run_id).bind(2, b.round);
  bind_reading(*q, 3, b.reading);
  q->bind(12, b.floor_bytes).bind(13, b.settled);
  bind_allocator(*q, 14, b.allocator);
  bind_gc(*q, 18, b.gc);
  if (auto s = q->run(); !s) return write_error(s.error(), run_id);
  return ok_status();
}

Status LedgerWriter::write_verdict(const std::string& run_id, const Verdict& v) {
  const std::string op = "saving verdict '" + v.kind + "' of run '" + run_id + "'";
  auto q = db_.query(
      "INSERT INTO verdicts (run_id, kind, severity, passed, round, phase, summary, at_mono_ns, "
      "at_wall_ns, cleared) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) "
      "ON CONFLICT (run_id, kind, round, phase, at_mono_ns) DO UPDATE SET "
      "severity = excluded.severity, passed = excluded.passed, summary = excluded.summary, "
      "at_wall_ns = excluded.at_wall_ns, cleared = excluded.cleared RETURNING id",
      op);
  if (!q) return q.error();
  q->bind(1, run_id).bind(2, v.kind).bind(3, severity_name(v.severity)).bind(4, v.passed);
  q->bind(5, v.round).bind(6, v.phase).bind(7, v.summary);
  bind_instant(*q, 8, v.at);
  q->bind(10, v.cleared);
  auto row = q->step();
  if (!row) return write_error(row.error(), run_id);
  if (!*row) return Error{op + ": the database returned no verdict id"};
  const std::int64_t id = Row(*q).int64("id");
  if (auto s = q->run(); !s) return write_error(s.error(), run_id);

  auto del = db_.query("DELETE FROM verdict_figures WHERE verdict_id = ?1", op);
  if (!del) return del.error();
  if (auto s = del->bind(1, id).run(); !s) return s;
  for (const auto& [name, value] : v.figures) {
    auto f =
        db_.query("INSERT INTO verdict_figures (verdict_id, name, value) VALUES (?1, ?2, ?3)", op);
    if (!f) return f.error();
    f->bind(1, id).bind(2, name);
    bind_real(*f, 3, value);
    if (auto s = f->run(); !s) return s;
  }
  return ok_status();
}

Status LedgerWriter::append_mark(const std::string& run_id, const MarkRecord& mark) {
  // One INSERT autocommits (one WAL append and one fsync), or joins atomically()'s transaction.
  return write_mark(run_id, mark);
}

Status LedgerWriter::save_phase(const std::string& run_id, const PhaseRecord& phase) {
  return write_phase(run_id, phase);
}

Status LedgerWriter::save_boundary(const std::string& run_id, const BoundaryRecord& boundary) {
  return write_boundary(run_id, boundary);
}

Status LedgerWriter::save_verdict(const std::string& run_id, const Verdict& verdict) {
  return in_transaction(db_, "saving a verdict", [&] { return write_verdict(run_id, verdict); });
}

}  // namespace ramguard
