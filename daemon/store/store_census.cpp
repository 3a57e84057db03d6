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
  Status read = db_->for_each_row(
      "SELECT round, at_end, at_unix_ms, mode, partial, duration_s, objects_seen, storages, host, "
      "gpu, pinned, shared, unreachable, other_groups, other_bytes, placed_anon, placed_file, "
      "placed_shmem, placed_device, unmapped, resident, files, placement_error, rss, counted, "
      "allocator_free FROM censuses WHERE run_id = ?1 ORDER BY at_end, round",
      op, [&](Query& q) { q.bind(1, run_id); },
      [&](const Row& row) {
        CensusRecord c;
        c.round = row.uint32("round");
        c.at_end = row.flag("at_end");
        c.at_unix_ms = row.int64("at_unix_ms");
        c.mode = row.text("mode");
        c.partial = row.text("partial");
        c.duration_seconds = row.real("duration_s");
        c.objects_seen = row.uint64("objects_seen");
        c.storages = row.uint32("storages");
        c.host_bytes = row.uint64("host");
        c.gpu_bytes = row.uint64("gpu");
        c.pinned_bytes = row.uint64("pinned");
        c.shared_bytes = row.uint64("shared");
        c.unreachable_bytes = row.uint64("unreachable");
        c.other_groups = row.uint32("other_groups");
        c.other_bytes = row.uint64("other_bytes");
        CensusPlacement& p = c.placement;
        p.anon_bytes = row.uint64("placed_anon");
        p.file_bytes = row.uint64("placed_file");
        p.shmem_bytes = row.uint64("placed_shmem");
        p.device_bytes = row.uint64("placed_device");
        p.unmapped_bytes = row.uint64("unmapped");
        p.resident_known = !row.is_null("resident");
        p.resident_bytes = p.resident_known ? row.uint64("resident") : 0;
        p.files = split_lines(row.text("files"));
        p.error = row.text("placement_error");
        c.rss_bytes = row.uint64("rss");
        c.counted_bytes = row.uint64("counted");
        c.allocator_free_bytes = row.uint64("allocator_free");
        out.push_back(std::move(c));
      });
  if (!read) return read.error();
  for (CensusRecord& c : out) {
    Status groups = db_->for_each_row(
        "SELECT holder, reachable, cycle, kind, bytes, gpu, storages, objects, dtype, pinned, "
        "shared FROM census_groups WHERE run_id = ?1 AND round = ?2 AND at_end = ?3 ORDER BY idx",
        op, [&](Query& q) { q.bind(1, run_id).bind(2, c.round).bind(3, c.at_end); },
        [&](const Row& row) {
          CensusGroup group;
          group.holder = row.text("holder");
          group.reachable = row.flag("reachable");
          group.cycle = row.text("cycle");
          group.kind = row.text("kind");
          group.bytes = row.uint64("bytes");
          group.gpu_bytes = row.uint64("gpu");
          group.storages = row.uint32("storages");
          group.objects = row.uint32("objects");
          group.dtype = row.text("dtype");
          group.pinned_bytes = row.uint64("pinned");
          group.shared_bytes = row.uint64("shared");
          c.groups.push_back(std::move(group));
        });
    if (!groups) return groups.error();
  }
  return out;
}

}  // namespace ramguard
