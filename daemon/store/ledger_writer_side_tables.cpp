// Beside the run records: downsampled samples, censuses, admission reservations and retention.
#include "store/ledger_queries.hpp"
#include "store/ledger_writer.hpp"
#include "store/sqlite_db.hpp"

namespace ramguard {

namespace {

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += (out.empty() ? "" : "\n") + l;
  return out;
}

}  // namespace

Status LedgerWriter::append_samples(const std::string& run_id,
                                    std::span<const ProgressSample> samples) {
  const std::string op =
      "appending " + std::to_string(samples.size()) + " samples to run '" + run_id + "'";
  Status s = in_transaction(db_, op, [&]() -> Status {
    for (const ProgressSample& x : samples) {
      auto q = db_.query(
          "INSERT INTO samples (run_id, at_unix_ms, rss, min_rss, max_rss, anon, file) "
          "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (run_id, at_unix_ms) DO UPDATE SET rss "
          "= excluded.rss, min_rss = excluded.min_rss, "
          "max_rss = excluded.max_rss, anon = excluded.anon, file = excluded.file",
          op);
      if (!q) return q.error();
      q->bind(1, run_id).bind(2, x.at_unix_ms).bind(3, x.rss_bytes).bind(4, x.min_rss_bytes);
      q->bind(5, x.max_rss_bytes).bind(6, x.anon_bytes).bind(7, x.file_bytes);
      if (auto r = q->run(); !r) return r;
    }
    return ok_status();
  });
  return s ? s : Status(write_error(s.error(), run_id));
}

Result<std::size_t> LedgerWriter::prune_runs(const std::chrono::nanoseconds ended_before_wall) {
  const std::string op = "pruning runs that ended before " +
                         std::to_string(ended_before_wall.count()) + " ns since the epoch";
  std::size_t removed = 0;
  queries_.forget_job_peaks();  // a pruned run may have been a job's peak on record
  Status s = in_transaction(db_, op, [&]() -> Status {
    // Child rows go with their run (ON DELETE CASCADE); active runs are never pruned.
    auto q = db_.query(
        "DELETE FROM runs WHERE state != 'active' AND ended_wall_ns IS NOT NULL AND "
        "ended_wall_ns < ?1",
        op);
    if (!q) return q.error();
    if (auto r = q->bind(1, static_cast<std::int64_t>(ended_before_wall.count())).run(); !r) {
      return r;
    }
    removed = static_cast<std::size_t>(db_.changes());
    return ok_status();
  });
  if (!s) return s.error();
  return removed;
}

Result<std::size_t> LedgerWriter::prune_oldest_runs(std::size_t count) {
  const std::string op = "pruning the " + std::to_string(count) + " oldest finished runs";
  std::size_t removed = 0;
  queries_.forget_job_peaks();
  Status s = in_transaction(db_, op, [&]() -> Status {
    auto q = db_.query(
        "DELETE FROM runs WHERE run_id IN (SELECT run_id FROM runs WHERE state != 'active' "
        "ORDER BY ended_wall_ns IS NOT NULL, ended_wall_ns, started_wall_ns LIMIT ?1)",
        op);
    if (!q) return q.error();
    if (auto r = q->bind(1, static_cast<std::int64_t>(count)).run(); !r) return r;
    removed = static_cast<std::size_t>(db_.changes());
    return ok_status();
  });
  if (!s) return s.error();
  return removed;
}

Status LedgerWriter::save_reservation(const Reservation& r) {
  const std::string op = "storing reservation '" + r.id + "'";
  auto q = db_.query(
      "INSERT INTO reservations (id, job, bytes, run_id, created_wall_ms, expires_wall_ms, "
      "owner_uid, source_kind, plan, calibrated_from) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10) ON CONFLICT (id) DO UPDATE SET "
      "job = excluded.job, bytes = excluded.bytes, run_id = excluded.run_id, "
      "created_wall_ms = excluded.created_wall_ms, expires_wall_ms = excluded.expires_wall_ms, "
      "owner_uid = excluded.owner_uid, source_kind = excluded.source_kind, "
      "plan = excluded.plan, calibrated_from = excluded.calibrated_from",
      op);
  if (!q) return q.error();
  q->bind(1, r.id).bind(2, r.job).bind(3, r.bytes).bind(4, r.run_id);
  q->bind(5, r.created_wall_ms).bind(6, r.expires_wall_ms).bind(7, r.owner_uid);
  q->bind(8, std::string(estimate_kind_name(r.source.kind)))
      .bind(9, r.source.plan)
      .bind(10, r.source.run_id);
  return q->run();
}

Status LedgerWriter::delete_reservation(const std::string& id) {
  auto q = db_.query("DELETE FROM reservations WHERE id = ?1", "deleting reservation '" + id + "'");
  if (!q) return q.error();
  return q->bind(1, id).run();
}

Status LedgerWriter::save_census(const std::string& run_id, const CensusRecord& c) {
  const std::string op =
      "saving the census of round " + std::to_string(c.round) + " of run '" + run_id + "'";
  // A side table per census and one for their groups (schema 5).
  Status s = in_transaction(db_, op, [&]() -> Status {
    // The groups go with their census (ON DELETE CASCADE).
    auto del =
        db_.query("DELETE FROM censuses WHERE run_id = ?1 AND round = ?2 AND at_end = ?3", op);
    if (!del) return del.error();
    if (auto r = del->bind(1, run_id).bind(2, c.round).bind(3, c.at_end).run(); !r) return r;
    auto q = db_.query(
        "INSERT INTO censuses (run_id, round, at_end, at_unix_ms, mode, partial, duration_s, "
        "objects_seen, storages, host, gpu, pinned, shared, unreachable, other_groups, "
        "other_bytes, placed_anon, placed_file, placed_shmem, placed_device, unmapped, resident, "
        "files, placement_error, rss, counted, allocator_free) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
        "?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, "
        "?25, ?26, ?27)",
        op);
    if (!q) return q.error();
    const CensusPlacement& p = c.placement;
    q->bind(1, run_id).bind(2, c.round).bind(3, c.at_end).bind(4, c.at_unix_ms);
    q->bind(5, c.mode).bind(6, c.partial).bind(7, c.duration_seconds).bind(8, c.objects_seen);
    q->bind(9, c.storages).bind(10, c.host_bytes).bind(11, c.gpu_bytes).bind(12, c.pinned_bytes);
    q->bind(13, c.shared_bytes).bind(14, c.unreachable_bytes).bind(15, c.other_groups);
    q->bind(16, c.other_bytes).bind(17, p.anon_bytes).bind(18, p.file_bytes);
    q->bind(19, p.shmem_bytes).bind(20, p.device_bytes).bind(21, p.unmapped_bytes);
    q->bind(22, p.resident_known ? std::optional<std::uint64_t>(p.resident_bytes) : std::nullopt);
    q->bind(23, join_lines(p.files)).bind(24, p.error).bind(25, c.rss_bytes);
    q->bind(26, c.counted_bytes).bind(27, c.allocator_free_bytes);
    if (auto r = q->run(); !r) return r;
    for (std::size_t i = 0; i < c.groups.size(); ++i) {
      const CensusGroup& g = c.groups[i];
      auto row = db_.query(
          "INSERT INTO census_groups (run_id, round, at_end, idx, holder, reachable, cycle, kind, "
          "bytes, gpu, storages, objects, dtype, pinned, shared) VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
          "?7, ?8, ?9, ?10, ?11, ?12, "
          "?13, ?14, ?15)",
          op);
      if (!row) return row.error();
      row->bind(1, run_id).bind(2, c.round).bind(3, c.at_end).bind(4, static_cast<std::int64_t>(i));
      row->bind(5, g.holder).bind(6, g.reachable).bind(7, g.cycle).bind(8, g.kind);
      row->bind(9, g.bytes).bind(10, g.gpu_bytes).bind(11, g.storages).bind(12, g.objects);
      row->bind(13, g.dtype).bind(14, g.pinned_bytes).bind(15, g.shared_bytes);
      if (auto r = row->run(); !r) return r;
    }
    return ok_status();
  });
  return s ? s : Status(write_error(s.error(), run_id));
}

}  // namespace ramguard
