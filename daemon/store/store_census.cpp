// The client's censuses: a side table per census and one for their groups (schema 5).
#include "store/sqlite_db.hpp"
#include "store/store.hpp"

namespace ramguard {

namespace {

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const std::string& l : lines) out += (out.empty() ? "" : "\n") + l;
  return out;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    const auto eol = text.find('\n', at);
    out.push_back(text.substr(at, eol == std::string::npos ? std::string::npos : eol - at));
    if (eol == std::string::npos) break;
    at = eol + 1;
  }
  return out;
}

}  // namespace

Status Store::save_census(const std::string& run_id, const CensusRecord& c) {
  const std::string op =
      "saving the census of round " + std::to_string(c.round) + " of run '" + run_id + "'";
  Status s = in_transaction(*db_, op, [&]() -> Status {
    // The groups go with their census (ON DELETE CASCADE).
    auto del =
        db_->query("DELETE FROM censuses WHERE run_id = ?1 AND round = ?2 AND at_end = ?3", op);
    if (!del) return del.error();
    if (auto r = del->bind(1, run_id).bind(2, c.round).bind(3, c.at_end).run(); !r) return r;
    auto q = db_->query(
        "INSERT INTO censuses VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
        "?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27)",
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
      auto row = db_->query(
          "INSERT INTO census_groups VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
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

Result<std::vector<CensusRecord>> Store::load_censuses(const std::string& run_id) {
  std::vector<CensusRecord> out;
  if (schema_version_ < 5) return out;
  const std::string op = "loading the censuses of run '" + run_id + "'";
  auto q = db_->query(
      "SELECT round, at_end, at_unix_ms, mode, partial, duration_s, objects_seen, storages, host, "
      "gpu, pinned, shared, unreachable, other_groups, other_bytes, placed_anon, placed_file, "
      "placed_shmem, placed_device, unmapped, resident, files, placement_error, rss, counted, "
      "allocator_free FROM censuses WHERE run_id = ?1 ORDER BY at_end, round",
      op);
  if (!q) return q.error();
  q->bind(1, run_id);
  for (;;) {
    auto row = q->step();
    if (!row) return row.error();
    if (!*row) break;
    CensusRecord c;
    c.round = static_cast<std::uint32_t>(q->int64(0));
    c.at_end = q->int64(1) != 0;
    c.at_unix_ms = q->int64(2);
    c.mode = q->text(3);
    c.partial = q->text(4);
    c.duration_seconds = q->real(5);
    c.objects_seen = q->uint64(6);
    c.storages = static_cast<std::uint32_t>(q->int64(7));
    c.host_bytes = q->uint64(8);
    c.gpu_bytes = q->uint64(9);
    c.pinned_bytes = q->uint64(10);
    c.shared_bytes = q->uint64(11);
    c.unreachable_bytes = q->uint64(12);
    c.other_groups = static_cast<std::uint32_t>(q->int64(13));
    c.other_bytes = q->uint64(14);
    CensusPlacement& p = c.placement;
    p.anon_bytes = q->uint64(15);
    p.file_bytes = q->uint64(16);
    p.shmem_bytes = q->uint64(17);
    p.device_bytes = q->uint64(18);
    p.unmapped_bytes = q->uint64(19);
    p.resident_known = !q->is_null(20);
    p.resident_bytes = p.resident_known ? q->uint64(20) : 0;
    p.files = split_lines(q->text(21));
    p.error = q->text(22);
    c.rss_bytes = q->uint64(23);
    c.counted_bytes = q->uint64(24);
    c.allocator_free_bytes = q->uint64(25);
    out.push_back(std::move(c));
  }
  for (CensusRecord& c : out) {
    auto g = db_->query(
        "SELECT holder, reachable, cycle, kind, bytes, gpu, storages, objects, dtype, pinned, "
        "shared FROM census_groups WHERE run_id = ?1 AND round = ?2 AND at_end = ?3 ORDER BY idx",
        op);
    if (!g) return g.error();
    g->bind(1, run_id).bind(2, c.round).bind(3, c.at_end);
    for (;;) {
      auto row = g->step();
      if (!row) return row.error();
      if (!*row) break;
      CensusGroup group;
      group.holder = g->text(0);
      group.reachable = g->int64(1) != 0;
      group.cycle = g->text(2);
      group.kind = g->text(3);
      group.bytes = g->uint64(4);
      group.gpu_bytes = g->uint64(5);
      group.storages = static_cast<std::uint32_t>(g->int64(6));
      group.objects = static_cast<std::uint32_t>(g->int64(7));
      group.dtype = g->text(8);
      group.pinned_bytes = g->uint64(9);
      group.shared_bytes = g->uint64(10);
      c.groups.push_back(std::move(group));
    }
  }
  return out;
}

}  // namespace ramguard
