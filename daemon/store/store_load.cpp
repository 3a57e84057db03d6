// Reading whole runs back: for restart recovery (load_active_runs) and reports (load_run).
#include <chrono>

#include "common/log.hpp"
#include "store/codec.hpp"
#include "store/sqlite_db.hpp"
#include "store/store.hpp"

namespace ramguard {

Status Store::load_labels(RunInfo& info) {
  auto q = db_->query("SELECT key, value FROM run_labels WHERE run_id = ?1",
                      "loading the labels of run '" + info.run_id + "'");
  if (!q) return q.error();
  q->bind(1, info.run_id);
  for (;;) {
    auto row = q->step();
    if (!row) return row.error();
    if (!*row) return ok_status();
    info.labels[q->text(0)] = q->text(1);
  }
}

Status Store::load_scope(RunInfo& info) {
  if (schema_version_ < 3) return ok_status();  // a read-only older ledger: process scope only
  auto q = db_->query("SELECT scope, cgroup_dir FROM run_scopes WHERE run_id = ?1",
                      "loading the scope of run '" + info.run_id + "'");
  if (!q) return q.error();
  q->bind(1, info.run_id);
  auto row = q->step();
  if (!row) return row.error();
  if (*row) {
    auto scope = parse_scope(q->text(0));
    if (!scope) {
      return Error{"run '" + info.run_id + "' in the ledger: " + scope.error().message,
                   ErrorKind::kInternal};
    }
    info.scope = *scope;
    info.cgroup_dir = q->text(1);
  }
  return ok_status();
}

Result<std::vector<Verdict>> Store::load_verdicts(const std::string& run_id,
                                                  std::optional<std::int64_t> only_id) {
  std::vector<Verdict> verdicts;
  if (auto s =
          stream_verdicts(run_id, only_id, [&](Verdict v) { verdicts.push_back(std::move(v)); });
      !s) {
    return s.error();
  }
  return verdicts;
}

Status Store::stream_verdicts(const std::string& run_id, std::optional<std::int64_t> only_id,
                              const std::function<void(Verdict)>& take) {
  const std::string op = "loading the verdicts of run '" + run_id + "'";
  // One row per figure (or one without): a verdict is complete when the next id begins.
  auto q = db_->query(
      "SELECT v.id, v.kind, v.severity, v.passed, v.round, v.phase, v.summary, v.at_mono_ns, "
      "v.at_wall_ns, v.cleared, f.name, f.value FROM verdicts v LEFT JOIN verdict_figures f "
      "ON f.verdict_id = v.id WHERE v.run_id = ?1 AND (?2 IS NULL OR v.id = ?2) ORDER BY v.id",
      op);
  if (!q) return q.error();
  q->bind(1, run_id).bind(2, only_id);
  std::optional<std::pair<std::int64_t, Verdict>> current;
  for (;;) {
    auto row = q->step();
    if (!row) return row.error();
    if (!*row) break;
    const std::int64_t id = q->int64(0);
    if (!current || current->first != id) {
      if (current) take(std::move(current->second));
      auto severity = parse_severity(q->text(2));
      if (!severity) return Error{op + ": " + severity.error().message};
      Verdict v;
      v.kind = q->text(1);
      v.severity = *severity;
      v.passed = q->int64(3) != 0;
      v.round = static_cast<std::uint32_t>(q->int64(4));
      v.phase = q->text(5);
      v.summary = q->text(6);
      v.at = read_instant(*q, 7);
      v.cleared = q->int64(9) != 0;
      current.emplace(id, std::move(v));
    }
    if (!q->is_null(10)) current->second.figures[q->text(10)] = read_real(*q, 11);
  }
  if (current) take(std::move(current->second));
  return ok_status();
}

Result<std::uint64_t> Store::mark_count(const std::string& run_id) {
  auto q = db_->query("SELECT count(*) FROM marks WHERE run_id = ?1",
                      "counting the marks of run '" + run_id + "'");
  if (!q) return q.error();
  q->bind(1, run_id);
  auto row = q->step();
  if (!row) return row.error();
  return *row ? q->uint64(0) : 0;
}

Status Store::stream_marks(const std::string& run_id, std::optional<std::uint64_t> newest,
                           const std::function<void(MarkRecord)>& take) {
  const std::string op = "loading run '" + run_id + "'";
  // The newest: the primary key read backwards for them alone, then put in order.
  auto q = newest ? db_->query(
                        "SELECT * FROM (SELECT * FROM marks WHERE run_id = ?1 ORDER BY "
                        "seq DESC LIMIT ?2) ORDER BY seq",
                        op)
                  : db_->query("SELECT * FROM marks WHERE run_id = ?1 ORDER BY seq", op);
  if (!q) return q.error();
  q->bind(1, run_id);
  if (newest) q->bind(2, *newest);
  for (;;) {
    auto row = q->step();
    if (!row) return row.error();
    if (!*row) return ok_status();
    MarkRecord m;
    m.seq = q->uint64(1);
    auto kind = parse_mark_kind(q->text(2));
    auto reading = read_reading(*q, 5);
    if (!kind || !reading) {
      return Error{op + ": mark " + std::to_string(m.seq) + ": " +
                   (kind ? reading.error() : kind.error()).message};
    }
    m.kind = *kind;
    m.phase = q->text(3);
    m.round = static_cast<std::uint32_t>(q->int64(4));
    m.reading = *reading;
    m.allocator = read_allocator(*q, 14);
    m.gc = read_gc(*q, 18);
    take(std::move(m));
  }
}

Status Store::stream_phases(const std::string& run_id,
                            const std::function<void(PhaseRecord)>& take) {
  auto q = db_->query(
      "SELECT phase, round, begin_mono_ns, begin_wall_ns, end_mono_ns, end_wall_ns, peak_bytes, "
      "peak_exact FROM phases WHERE run_id = ?1 ORDER BY rowid",
      "loading run '" + run_id + "'");
  if (!q) return q.error();
  q->bind(1, run_id);
  for (;;) {
    auto row = q->step();
    if (!row) return row.error();
    if (!*row) return ok_status();
    PhaseRecord p;
    p.phase = q->text(0);
    p.round = static_cast<std::uint32_t>(q->int64(1));
    p.begin = read_instant(*q, 2);
    p.end = read_optional_instant(*q, 4);
    p.peak_bytes = q->uint64(6);
    p.peak_exact = q->int64(7) != 0;
    take(std::move(p));
  }
}

Status Store::stream_boundaries(const std::string& run_id,
                                const std::function<void(BoundaryRecord)>& take) {
  const std::string op = "loading run '" + run_id + "'";
  auto q = db_->query("SELECT * FROM boundaries WHERE run_id = ?1 ORDER BY round", op);
  if (!q) return q.error();
  q->bind(1, run_id);
  for (;;) {
    auto row = q->step();
    if (!row) return row.error();
    if (!*row) return ok_status();
    BoundaryRecord b;
    b.round = static_cast<std::uint32_t>(q->int64(1));
    auto reading = read_reading(*q, 2);
    if (!reading)
      return Error{op + ": boundary " + std::to_string(b.round) + ": " + reading.error().message};
    b.reading = *reading;
    b.floor_bytes = q->uint64(11);
    b.settled = q->int64(12) != 0;
    b.allocator = read_allocator(*q, 13);
    b.gc = read_gc(*q, 17);
    take(std::move(b));
  }
}

Status Store::load_details(RunLedger& l) {
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

Status Store::load_head_details(RunInfo& info) {
  if (auto s = load_labels(info); !s) return s;
  return load_scope(info);
}

Result<RunLedger> Store::load_run(const std::string& run_id) {
  std::optional<RunLedger> ledger;
  {
    auto q =
        db_->query("SELECT runs.* FROM runs WHERE run_id = ?1", "loading run '" + run_id + "'");
    if (!q) return q.error();
    q->bind(1, run_id);
    auto row = q->step();
    if (!row) return row.error();
    if (!*row) return require_run(run_id, "loading a run").error();
    auto l = read_run_row(*q);
    if (!l) return l.error();
    ledger = std::move(*l);
  }
  if (auto s = load_details(*ledger); !s) return s.error();
  return std::move(*ledger);
}

Result<std::vector<RunLedger>> Store::load_active_runs() {
  std::vector<RunLedger> loaded;
  auto each = for_each_active_run([&](RunLedger l) -> Status {
    if (auto s = load_details(l); !s) return s;
    loaded.push_back(std::move(l));
    return ok_status();
  });
  if (!each) return each.error();
  return loaded;
}

Status Store::for_each_active_run(const std::function<Status(RunLedger head)>& resume) {
  // The runs' rows first (small), then each run's records, read by `resume` before the next.
  std::vector<RunLedger> runs;
  std::vector<std::pair<std::string, std::string>> undecodable;  // run id, reason
  {
    auto q =
        db_->query("SELECT runs.* FROM runs WHERE state = 'active' ORDER BY started_wall_ns, rowid",
                   "loading the active runs");
    if (!q) return q.error();
    for (;;) {
      auto row = q->step();
      if (!row) return row.error();
      if (!*row) break;
      auto l = read_run_row(*q);
      if (!l) {
        undecodable.emplace_back(q->text(0), l.error().message);
        continue;
      }
      runs.push_back(std::move(*l));
    }
  }
  for (RunLedger& l : runs) {
    RunLedger head = std::move(l);
    const std::string run_id = head.info.run_id;
    Status s = load_head_details(head.info);
    if (s) s = resume(std::move(head));
    if (!s) undecodable.emplace_back(run_id, s.error().message);
  }
  // One bad run must not cost the others their recovery: skip it, say why, and end it lost so
  // the next start does not trip over it again (impossible on a read-only ledger; then it
  // stays active in the file and is skipped again).
  for (const auto& [run_id, reason] : undecodable) {
    const Status ended = end_undecodable(run_id);
    log::error("recovery.run_skipped", {{"run", run_id},
                                        {"reason", reason},
                                        {"ended_lost", ended.ok()},
                                        {"end_error", ended ? "" : ended.error().message}});
  }
  return ok_status();
}

Status Store::end_undecodable(const std::string& run_id) {
  const std::string op = "ending undecodable run '" + run_id + "' lost";
  job_peaks_.clear();
  auto q = db_->query(
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

Result<std::vector<ProgressSample>> Store::load_samples(const std::string& run_id) {
  if (auto s = require_run(run_id, "loading samples"); !s) return s.error();
  auto q = db_->query("SELECT * FROM samples WHERE run_id = ?1 ORDER BY at_unix_ms",
                      "loading the samples of run '" + run_id + "'");
  if (!q) return q.error();
  q->bind(1, run_id);
  std::vector<ProgressSample> samples;
  for (;;) {
    auto row = q->step();
    if (!row) return row.error();
    if (!*row) return samples;
    samples.push_back(ProgressSample{q->int64(1), q->uint64(2), q->uint64(3), q->uint64(4),
                                     q->uint64(5), q->uint64(6)});
  }
}

Result<std::vector<Reservation>> Store::load_reservations() {
  // A ledger opened read-only may be older: at schema 1 (no owner column) its rows are root's,
  // before schema 4 (no estimate source) they are given estimates without a plan.
  const char* owner = schema_version_ >= 2 ? "owner_uid" : "0";
  const char* source =
      schema_version_ >= 4 ? "source_kind, plan, calibrated_from" : "'given', '', ''";
  auto q =
      db_->query(std::string("SELECT id, job, bytes, run_id, created_wall_ms, "
                             "expires_wall_ms, ") +
                     owner + ", " + source + " FROM reservations ORDER BY created_wall_ms, rowid",
                 "loading the reservations");
  if (!q) return q.error();
  std::vector<Reservation> out;
  for (;;) {
    auto row = q->step();
    if (!row) return row.error();
    if (!*row) return out;
    // An unknown kind (a newer writer) reads as given: the figure stays, only the plan is lost.
    const EstimateKind kind = parse_estimate_kind(q->text(7)).value_or(EstimateKind::kGiven);
    out.push_back(Reservation{.id = q->text(0),
                              .job = q->text(1),
                              .bytes = q->uint64(2),
                              .source = EstimateSource{kind, q->text(8), q->text(9)},
                              .run_id = q->text(3),
                              .owner_uid = static_cast<std::uint32_t>(q->int64(6)),
                              .created_wall_ms = q->int64(4),
                              .expires_wall_ms = q->int64(5)});
  }
}

}  // namespace ramguard
