// Reading one run back: whole (load_run, reports) or record by record (restart recovery,
// exports), its samples and censuses; reservations and counts. Reads across runs are in
// ledger_queries_across.cpp.
#include "store/ledger_queries.hpp"

#include "store/codec.hpp"
#include "store/sqlite_db.hpp"

namespace ramguard {
namespace {

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

constexpr std::string_view kUnknownRun = "unknown run id '";

}  // namespace

bool is_unknown_run(const Error& error) {
  return error.message.starts_with(kUnknownRun);
}

Error unknown_run(const std::string& run_id, const std::filesystem::path& file) {
  return Error{std::string(kUnknownRun) + run_id + "': no such run in " + file.string()};
}

Status LedgerQueries::require_run(const std::string& run_id, const char* operation) {
  auto q = db_.query("SELECT 1 FROM runs WHERE run_id = ?1", operation);
  if (!q) return q.error();
  q->bind(1, run_id);
  auto row = q->step();
  if (!row) return row.error();
  if (!*row) return unknown_run(run_id, db_.path());
  return ok_status();
}

Status LedgerQueries::load_labels(RunInfo& info) {
  return db_.for_each_row(
      "SELECT key, value FROM run_labels WHERE run_id = ?1",
      "loading the labels of run '" + info.run_id + "'", [&](Query& q) { q.bind(1, info.run_id); },
      [&](const Row& row) { info.labels[row.text("key")] = row.text("value"); });
}

Status LedgerQueries::load_scope(RunInfo& info) {
  if (schema_version_ < 3) return ok_status();  // a read-only older ledger: process scope only
  return db_.for_each_row(
      "SELECT scope, cgroup_dir FROM run_scopes WHERE run_id = ?1",
      "loading the scope of run '" + info.run_id + "'", [&](Query& q) { q.bind(1, info.run_id); },
      [&](const Row& row) -> Status {
        auto scope = parse_scope(row.text("scope"));
        if (!scope) {
          return Error{"run '" + info.run_id + "' in the ledger: " + scope.error().message,
                       ErrorKind::kInternal};
        }
        info.scope = *scope;
        info.cgroup_dir = row.text("cgroup_dir");
        return ok_status();
      });
}

Result<std::vector<Verdict>> LedgerQueries::load_verdicts(const std::string& run_id,
                                                          std::optional<std::int64_t> only_id) {
  std::vector<Verdict> verdicts;
  if (auto s =
          stream_verdicts(run_id, only_id, [&](Verdict v) { verdicts.push_back(std::move(v)); });
      !s) {
    return s.error();
  }
  return verdicts;
}

Status LedgerQueries::stream_verdicts(const std::string& run_id,
                                      std::optional<std::int64_t> only_id,
                                      const std::function<void(Verdict)>& take) {
  const std::string op = "loading the verdicts of run '" + run_id + "'";
  // One row per figure (or one without): a verdict is complete when the next id begins.
  std::optional<std::pair<std::int64_t, Verdict>> current;
  Status s = db_.for_each_row(
      "SELECT v.id, v.kind, v.severity, v.passed, v.round, v.phase, v.summary, v.at_mono_ns, "
      "v.at_wall_ns, v.cleared, f.name AS figure, f.value FROM verdicts v LEFT JOIN "
      "verdict_figures f ON f.verdict_id = v.id WHERE v.run_id = ?1 AND (?2 IS NULL OR v.id = ?2) "
      "ORDER BY v.id",
      op, [&](Query& q) { q.bind(1, run_id).bind(2, only_id); },
      [&](const Row& row) -> Status {
        const std::int64_t id = row.int64("id");
        if (!current || current->first != id) {
          if (current) take(std::move(current->second));
          auto severity = parse_severity(row.text("severity"));
          if (!severity) return Error{op + ": " + severity.error().message};
          Verdict v;
          v.kind = row.text("kind");
          v.severity = *severity;
          v.passed = row.flag("passed");
          v.round = row.uint32("round");
          v.phase = row.text("phase");
          v.summary = row.text("summary");
          v.at = read_instant(row, {"at_mono_ns", "at_wall_ns"});
          v.cleared = row.flag("cleared");
          current.emplace(id, std::move(v));
        }
        if (!row.is_null("figure"))
          current->second.figures[row.text("figure")] = read_real(row, "value");
        return ok_status();
      });
  if (!s) return s;
  if (current) take(std::move(current->second));
  return ok_status();
}

Result<std::uint64_t> LedgerQueries::mark_count(const std::string& run_id) {
  std::uint64_t count = 0;
  Status s = db_.for_each_row(
      "SELECT count(*) AS marks FROM marks WHERE run_id = ?1",
      "counting the marks of run '" + run_id + "'", [&](Query& q) { q.bind(1, run_id); },
      [&](const Row& row) { count = row.uint64("marks"); });
  if (!s) return s.error();
  return count;
}

Status LedgerQueries::stream_marks(const std::string& run_id, std::optional<std::uint64_t> newest,
                                   const std::function<void(MarkRecord)>& take) {
  const std::string op = "loading run '" + run_id + "'";
  // The newest: the primary key read backwards for them alone, then put in order.
  static const std::string kColumns = "seq, kind, phase, round, " + std::string(kRecordFactsSelect);
  static const std::string kAll =
      "SELECT " + kColumns + " FROM marks WHERE run_id = ?1 ORDER BY seq";
  static const std::string kNewest = "SELECT " + kColumns + " FROM (SELECT " + kColumns +
                                     " FROM marks WHERE run_id = ?1 ORDER BY seq DESC LIMIT ?2) "
                                     "ORDER BY seq";
  return db_.for_each_row(
      newest ? kNewest : kAll, op,
      [&](Query& q) {
        q.bind(1, run_id);
        if (newest) q.bind(2, *newest);
      },
      [&](const Row& row) -> Status {
        MarkRecord m;
        m.seq = row.uint64("seq");
        auto kind = parse_mark_kind(row.text("kind"));
        m.phase = row.text("phase");
        m.round = row.uint32("round");
        auto reading = read_reading(row, kRecordReading);
        if (!kind || !reading) {
          return Error{op + ": mark " + std::to_string(m.seq) + ": " +
                       (kind ? reading.error() : kind.error()).message};
        }
        m.kind = *kind;
        m.reading = *reading;
        m.allocator = read_allocator(row);
        m.gc = read_gc(row);
        take(std::move(m));
        return ok_status();
      });
}

Status LedgerQueries::stream_phases(const std::string& run_id,
                                    const std::function<void(PhaseRecord)>& take) {
  return db_.for_each_row(
      "SELECT phase, round, begin_mono_ns, begin_wall_ns, end_mono_ns, end_wall_ns, peak_bytes, "
      "peak_exact FROM phases WHERE run_id = ?1 ORDER BY rowid",
      "loading run '" + run_id + "'", [&](Query& q) { q.bind(1, run_id); },
      [&](const Row& row) {
        PhaseRecord p;
        p.phase = row.text("phase");
        p.round = row.uint32("round");
        p.begin = read_instant(row, {"begin_mono_ns", "begin_wall_ns"});
        p.end = read_optional_instant(row, {"end_mono_ns", "end_wall_ns"});
        p.peak_bytes = row.uint64("peak_bytes");
        p.peak_exact = row.flag("peak_exact");
        take(std::move(p));
      });
}

Status LedgerQueries::stream_boundaries(const std::string& run_id,
                                        const std::function<void(BoundaryRecord)>& take) {
  const std::string op = "loading run '" + run_id + "'";
  static const std::string kSql = "SELECT round, " + std::string(kRecordFactsSelect) +
                                  ", floor_bytes, settled FROM boundaries WHERE run_id = ?1 "
                                  "ORDER BY round";
  return db_.for_each_row(
      kSql, op, [&](Query& q) { q.bind(1, run_id); },
      [&](const Row& row) -> Status {
        BoundaryRecord b;
        b.round = row.uint32("round");
        auto reading = read_reading(row, kRecordReading);
        if (!reading) {
          return Error{op + ": boundary " + std::to_string(b.round) + ": " +
                       reading.error().message};
        }
        b.reading = *reading;
        b.allocator = read_allocator(row);
        b.gc = read_gc(row);
        b.floor_bytes = row.uint64("floor_bytes");
        b.settled = row.flag("settled");
        take(std::move(b));
        return ok_status();
      });
}

Status LedgerQueries::load_details(RunLedger& l) {
  const std::string& id = l.info.run_id;
  if (auto s = load_head_details(l.info); !s) return s;
  if (auto s =
          stream_marks(id, std::nullopt, [&](MarkRecord m) { l.marks.push_back(std::move(m)); });
      !s) {
    return s;
  }
  if (auto s = stream_phases(id, [&](PhaseRecord p) { l.phases.push_back(std::move(p)); }); !s) {
    return s;
  }
  if (auto s =
          stream_boundaries(id, [&](BoundaryRecord b) { l.boundaries.push_back(std::move(b)); });
      !s) {
    return s;
  }
  auto verdicts = load_verdicts(id, std::nullopt);
  if (!verdicts) return verdicts.error();
  l.verdicts = std::move(*verdicts);
  return ok_status();
}

Status LedgerQueries::load_head_details(RunInfo& info) {
  if (auto s = load_labels(info); !s) return s;
  return load_scope(info);
}

Result<RunLedger> LedgerQueries::load_run(const std::string& run_id) {
  static const std::string kSql =
      "SELECT " + std::string(kRunSelect) + " FROM runs WHERE run_id = ?1";
  std::optional<RunLedger> ledger;
  Status read = db_.for_each_row(
      kSql, "loading run '" + run_id + "'", [&](Query& q) { q.bind(1, run_id); },
      [&](const Row& row) -> Status {
        auto l = read_run_row(row);
        if (!l) return l.error();
        ledger = std::move(*l);
        return ok_status();
      });
  if (!read) return read.error();
  if (!ledger) return require_run(run_id, "loading a run").error();
  if (auto s = load_details(*ledger); !s) return s.error();
  return std::move(*ledger);
}

Status LedgerQueries::active_run_heads(
    std::vector<RunLedger>& runs, std::vector<std::pair<std::string, std::string>>& undecodable) {
  static const std::string kSql = "SELECT " + std::string(kRunSelect) +
                                  " FROM runs WHERE state = 'active' ORDER BY started_wall_ns, "
                                  "rowid";
  Status read = db_.for_each_row(
      kSql, "loading the active runs", [](Query&) {},
      [&](const Row& row) {
        auto l = read_run_row(row);
        if (!l) {
          undecodable.emplace_back(row.text("run_id"), l.error().message);
        } else {
          runs.push_back(std::move(*l));
        }
      });
  return read;
}

Result<std::vector<ProgressSample>> LedgerQueries::load_samples(const std::string& run_id) {
  if (auto s = require_run(run_id, "loading samples"); !s) return s.error();
  std::vector<ProgressSample> samples;
  Status s = db_.for_each_row(
      "SELECT at_unix_ms, rss, min_rss, max_rss, anon, file FROM samples WHERE run_id = ?1 "
      "ORDER BY at_unix_ms",
      "loading the samples of run '" + run_id + "'", [&](Query& q) { q.bind(1, run_id); },
      [&](const Row& row) {
        samples.push_back(ProgressSample{row.int64("at_unix_ms"), row.uint64("rss"),
                                         row.uint64("min_rss"), row.uint64("max_rss"),
                                         row.uint64("anon"), row.uint64("file")});
      });
  if (!s) return s.error();
  return samples;
}

Result<std::vector<Reservation>> LedgerQueries::load_reservations() {
  // A ledger opened read-only may be older: at schema 1 (no owner column) its rows are root's,
  // before schema 4 (no estimate source) they are given estimates without a plan.
  const char* owner = schema_version_ >= 2 ? "owner_uid" : "0 AS owner_uid";
  const char* source = schema_version_ >= 4
                           ? "source_kind, plan, calibrated_from"
                           : "'given' AS source_kind, '' AS plan, '' AS calibrated_from";
  std::vector<Reservation> out;
  Status s = db_.for_each_row(
      std::string("SELECT id, job, bytes, run_id, created_wall_ms, expires_wall_ms, ") + owner +
          ", " + source + " FROM reservations ORDER BY created_wall_ms, rowid",
      "loading the reservations", [](Query&) {},
      [&](const Row& row) {
        // An unknown kind (a newer writer) reads as given: the figure stays, only the plan is
        // lost.
        const EstimateKind kind =
            parse_estimate_kind(row.text("source_kind")).value_or(EstimateKind::kGiven);
        out.push_back(Reservation{
            .id = row.text("id"),
            .job = row.text("job"),
            .bytes = row.uint64("bytes"),
            .source = EstimateSource{kind, row.text("plan"), row.text("calibrated_from")},
            .run_id = row.text("run_id"),
            .owner_uid = row.uint32("owner_uid"),
            .created_wall_ms = row.int64("created_wall_ms"),
            .expires_wall_ms = row.int64("expires_wall_ms")});
      });
  if (!s) return s.error();
  return out;
}

Result<std::vector<CensusRecord>> LedgerQueries::load_censuses(const std::string& run_id) {
  std::vector<CensusRecord> out;
  if (schema_version_ < 5) return out;
  const std::string op = "loading the censuses of run '" + run_id + "'";
  Status read = db_.for_each_row(
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
    Status groups = db_.for_each_row(
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

Result<std::size_t> LedgerQueries::run_count() {
  auto n = db_.scalar_int64("SELECT COUNT(*) FROM runs", "counting runs");
  if (!n) return n.error();
  return static_cast<std::size_t>(*n);
}

Result<std::size_t> LedgerQueries::finished_run_count() {
  auto n = db_.scalar_int64("SELECT COUNT(*) FROM runs WHERE state != 'active'",
                            "counting finished runs");
  if (!n) return n.error();
  return static_cast<std::size_t>(*n);
}

Result<std::uint64_t> LedgerQueries::used_bytes() {
  auto pages = db_.scalar_int64("PRAGMA page_count", "reading the ledger's page count");
  if (!pages) return pages.error();
  auto free_pages = db_.scalar_int64("PRAGMA freelist_count", "reading the ledger's free pages");
  if (!free_pages) return free_pages.error();
  auto page = db_.scalar_int64("PRAGMA page_size", "reading the ledger's page size");
  if (!page) return page.error();
  return static_cast<std::uint64_t>(*pages - *free_pages) * static_cast<std::uint64_t>(*page);
}

}  // namespace ramguard
