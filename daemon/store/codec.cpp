#include "store/codec.hpp"

#include <cmath>
#include <limits>
#include <string>

namespace ramguard {
namespace {

Error unknown(std::string_view what, std::string_view text, std::string_view allowed) {
  return Error{"stored " + std::string(what) + " '" + std::string(text) +
               "' is not one of: " + std::string(allowed)};
}

}  // namespace

const char* mark_kind_name(MarkKind kind) {
  switch (kind) {
    case MarkKind::kPhaseBegin:
      return "phase_begin";
    case MarkKind::kPhaseEnd:
      return "phase_end";
    case MarkKind::kRoundEnd:
      return "round_end";
    case MarkKind::kRunStart:
      return "run_start";
    case MarkKind::kRunEnd:
      return "run_end";
  }
  return "phase_begin";
}

Result<MarkKind> parse_mark_kind(std::string_view text) {
  for (MarkKind k : {MarkKind::kPhaseBegin, MarkKind::kPhaseEnd, MarkKind::kRoundEnd,
                     MarkKind::kRunStart, MarkKind::kRunEnd}) {
    if (text == mark_kind_name(k)) return k;
  }
  return unknown("mark kind", text, "phase_begin, phase_end, round_end, run_start, run_end");
}

Result<RunState> parse_run_state(std::string_view text) {
  for (RunState s : {RunState::kActive, RunState::kEnded, RunState::kExited, RunState::kLost}) {
    if (text == run_state_name(s)) return s;
  }
  return unknown("run state", text, "active, ended, exited, lost");
}

Result<Severity> parse_severity(std::string_view text) {
  for (Severity s : {Severity::kInfo, Severity::kWarning, Severity::kCritical}) {
    if (text == severity_name(s)) return s;
  }
  return unknown("severity", text, "info, warning, critical");
}

const char* reading_source_name(ReadingSource source) {
  return source == ReadingSource::kMark ? "mark" : "periodic";
}

Result<ReadingSource> parse_reading_source(std::string_view text) {
  if (text == "mark") return ReadingSource::kMark;
  if (text == "periodic") return ReadingSource::kPeriodic;
  return unknown("reading source", text, "mark, periodic");
}

void bind_instant(Query& q, int first, const Instant& at) {
  q.bind(first, static_cast<std::int64_t>(at.monotonic.count()))
      .bind(first + 1, static_cast<std::int64_t>(at.wall.count()));
}

void bind_instant(Query& q, int first, const std::optional<Instant>& at) {
  if (at) {
    bind_instant(q, first, *at);
  } else {
    q.bind_null(first).bind_null(first + 1);
  }
}

Instant read_instant(const Row& row, InstantNames names) {
  return {std::chrono::nanoseconds(row.int64(names.mono_ns)),
          std::chrono::nanoseconds(row.int64(names.wall_ns))};
}

std::optional<Instant> read_optional_instant(const Row& row, InstantNames names) {
  if (row.is_null(names.mono_ns)) return std::nullopt;
  return read_instant(row, names);
}

void bind_reading(Query& q, int first, const MemoryReading& r) {
  bind_instant(q, first, r.at);
  q.bind(first + 2, reading_source_name(r.source))
      .bind(first + 3, r.rss_bytes)
      .bind(first + 4, r.anon_bytes)
      .bind(first + 5, r.file_bytes)
      .bind(first + 6, r.shmem_bytes)
      .bind(first + 7, r.swap_bytes)
      .bind(first + 8, r.hwm_bytes);
}

Result<MemoryReading> read_reading(const Row& row, const ReadingNames& names) {
  auto source = parse_reading_source(row.text(names.source));
  if (!source) return source.error();
  MemoryReading r;
  r.at = read_instant(row, names.at);
  r.source = *source;
  r.rss_bytes = row.uint64(names.rss);
  r.anon_bytes = row.uint64(names.anon);
  r.file_bytes = row.uint64(names.file);
  r.shmem_bytes = row.uint64(names.shmem);
  r.swap_bytes = row.uint64(names.swap);
  r.hwm_bytes = row.uint64(names.hwm);
  return r;
}

void bind_allocator(Query& q, int first, const std::optional<AllocatorFacts>& facts) {
  if (!facts) {
    for (int i = 0; i < kAllocatorColumns; ++i) q.bind_null(first + i);
    return;
  }
  q.bind(first, facts->allocated_bytes)
      .bind(first + 1, facts->active_bytes)
      .bind(first + 2, facts->resident_bytes)
      .bind(first + 3, facts->retained_bytes);
}

std::optional<AllocatorFacts> read_allocator(const Row& row, const AllocatorNames& names) {
  if (row.is_null(names.allocated)) return std::nullopt;
  return AllocatorFacts{row.uint64(names.allocated), row.uint64(names.active),
                        row.uint64(names.resident), row.uint64(names.retained)};
}

void bind_gc(Query& q, int first, const std::optional<GcFacts>& facts) {
  if (!facts) {
    for (int i = 0; i < kGcColumns; ++i) q.bind_null(first + i);
    return;
  }
  q.bind(first, facts->rss_before_bytes)
      .bind(first + 1, facts->rss_after_bytes)
      .bind(first + 2, facts->collected_objects);
  bind_real(q, first + 3, facts->duration_seconds);
}

std::optional<GcFacts> read_gc(const Row& row, const GcNames& names) {
  if (row.is_null(names.rss_before)) return std::nullopt;
  return GcFacts{row.uint64(names.rss_before), row.uint64(names.rss_after),
                 row.uint64(names.collected), read_real(row, names.duration_s)};
}

namespace {

constexpr ReadingNames kBaseline = {{"base_mono_ns", "base_wall_ns"},
                                    "base_source",
                                    "base_rss",
                                    "base_anon",
                                    "base_file",
                                    "base_shmem",
                                    "base_swap",
                                    "base_hwm"};
constexpr ReadingNames kLast = {{"last_mono_ns", "last_wall_ns"},
                                "last_source",
                                "last_rss",
                                "last_anon",
                                "last_file",
                                "last_shmem",
                                "last_swap",
                                "last_hwm"};

}  // namespace

Result<RunLedger> read_run_row(const Row& row) {
  RunLedger l;
  RunInfo& i = l.info;
  i.run_id = row.text("run_id");
  i.job = row.text("job");
  i.target.pid = static_cast<pid_t>(row.int64("target_pid"));
  i.target.start_time_ticks = row.uint64("target_start_ticks");
  i.owner_uid = row.uint32("owner_uid");
  i.model_bytes = row.uint64("model_bytes");
  i.declared_rounds = row.uint32("declared_rounds");
  i.hosts = row.uint32("hosts");
  i.estimate_bytes = row.uint64("estimate_bytes");
  i.plan = row.text("plan");
  i.reservation_id = row.text("reservation_id");
  auto state = parse_run_state(row.text("state"));
  if (!state) return Error{"run '" + i.run_id + "': " + state.error().message};
  l.state = *state;
  l.started = read_instant(row, {"started_mono_ns", "started_wall_ns"});
  l.ended = read_optional_instant(row, {"ended_mono_ns", "ended_wall_ns"});
  l.peak_bytes = row.uint64("peak_bytes");
  l.peak_exact = row.flag("peak_exact");
  auto baseline = read_reading(row, kBaseline);
  if (!baseline) return Error{"run '" + i.run_id + "' baseline: " + baseline.error().message};
  l.baseline = *baseline;
  auto last = read_reading(row, kLast);
  if (!last) return Error{"run '" + i.run_id + "' last reading: " + last.error().message};
  l.last = *last;
  return l;
}

void bind_real(Query& q, int index, double value) {
  if (std::isnan(value)) {
    q.bind_null(index);
  } else {
    q.bind(index, value);
  }
}

double read_real(const Row& row, ColumnName column) {
  return row.is_null(column) ? std::numeric_limits<double>::quiet_NaN() : row.real(column);
}

}  // namespace ramguard
