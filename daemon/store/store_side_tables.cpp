// Beside the run records: downsampled samples, admission reservations and retention.
#include "store/sqlite_db.hpp"
#include "store/store.hpp"

namespace ramguard {

Status Store::append_samples(const std::string& run_id, std::span<const ProgressSample> samples) {
  const std::string op =
      "appending " + std::to_string(samples.size()) + " samples to run '" + run_id + "'";
  Status s = in_transaction(*db_, op, [&]() -> Status {
    for (const ProgressSample& x : samples) {
      auto q = db_->query(
          "INSERT INTO samples VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (run_id, "
          "at_unix_ms) DO UPDATE SET rss = excluded.rss, min_rss = excluded.min_rss, "
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

Result<std::size_t> Store::prune_runs(const std::chrono::nanoseconds ended_before_wall) {
  const std::string op = "pruning runs that ended before " +
                         std::to_string(ended_before_wall.count()) + " ns since the epoch";
  std::size_t removed = 0;
  job_peaks_.clear();  // a pruned run may have been a job's peak on record
  Status s = in_transaction(*db_, op, [&]() -> Status {
    // Child rows go with their run (ON DELETE CASCADE); active runs are never pruned.
    auto q = db_->query(
        "DELETE FROM runs WHERE state != 'active' AND ended_wall_ns IS NOT NULL AND "
        "ended_wall_ns < ?1",
        op);
    if (!q) return q.error();
    if (auto r = q->bind(1, static_cast<std::int64_t>(ended_before_wall.count())).run(); !r) {
      return r;
    }
    removed = static_cast<std::size_t>(db_->changes());
    return ok_status();
  });
  if (!s) return s.error();
  return removed;
}

Result<std::size_t> Store::prune_oldest_runs(std::size_t count) {
  const std::string op = "pruning the " + std::to_string(count) + " oldest finished runs";
  std::size_t removed = 0;
  job_peaks_.clear();
  Status s = in_transaction(*db_, op, [&]() -> Status {
    auto q = db_->query(
        "DELETE FROM runs WHERE run_id IN (SELECT run_id FROM runs WHERE state != 'active' "
        "ORDER BY ended_wall_ns IS NOT NULL, ended_wall_ns, started_wall_ns LIMIT ?1)",
        op);
    if (!q) return q.error();
    if (auto r = q->bind(1, static_cast<std::int64_t>(count)).run(); !r) return r;
    removed = static_cast<std::size_t>(db_->changes());
    return ok_status();
  });
  if (!s) return s.error();
  return removed;
}

Result<std::size_t> Store::run_count() {
  auto n = db_->scalar_int64("SELECT COUNT(*) FROM runs", "counting runs");
  if (!n) return n.error();
  return static_cast<std::size_t>(*n);
}

Result<std::size_t> Store::finished_run_count() {
  auto n = db_->scalar_int64("SELECT COUNT(*) FROM runs WHERE state != 'active'",
                             "counting finished runs");
  if (!n) return n.error();
  return static_cast<std::size_t>(*n);
}

Result<std::uint64_t> Store::used_bytes() {
  auto pages = db_->scalar_int64("PRAGMA page_count", "reading the ledger's page count");
  if (!pages) return pages.error();
  auto free_pages = db_->scalar_int64("PRAGMA freelist_count", "reading the ledger's free pages");
  if (!free_pages) return free_pages.error();
  auto page = db_->scalar_int64("PRAGMA page_size", "reading the ledger's page size");
  if (!page) return page.error();
  return static_cast<std::uint64_t>(*pages - *free_pages) * static_cast<std::uint64_t>(*page);
}

Status Store::save_reservation(const Reservation& r) {
  const std::string op = "storing reservation '" + r.id + "'";
  auto q = db_->query(
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

Status Store::delete_reservation(const std::string& id) {
  auto q =
      db_->query("DELETE FROM reservations WHERE id = ?1", "deleting reservation '" + id + "'");
  if (!q) return q.error();
  return q->bind(1, id).run();
}

}  // namespace ramguard
