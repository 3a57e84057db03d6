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

Instant read_instant(const Query& q, int first) {
  return {std::chrono::nanoseconds(q.int64(first)), std::chrono::nanoseconds(q.int64(first + 1))};
}

std::optional<Instant> read_optional_instant(const Query& q, int first) {
  if (q.is_null(first)) return std::nullopt;
  return read_instant(q, first);
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

Result<MemoryReading> read_reading(const Query& q, int first) {
  auto source = parse_reading_source(q.text(first + 2));
  if (!source) return source.error();
  MemoryReading r;
  r.at = read_instant(q, first);
  r.source = *source;
  r.rss_bytes = q.uint64(first + 3);
  r.anon_bytes = q.uint64(first + 4);
  r.file_bytes = q.uint64(first + 5);
  r.shmem_bytes = q.uint64(first + 6);
  r.swap_bytes = q.uint64(first + 7);
  r.hwm_bytes = q.uint64(first + 8);
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

std::optional<AllocatorFacts> read_allocator(const Query& q, int first) {
  if (q.is_null(first)) return std::nullopt;
  return AllocatorFacts{q.uint64(first), q.uint64(first + 1), q.uint64(first + 2),
                        q.uint64(first + 3)};
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

std::optional<GcFacts> read_gc(const Query& q, int first) {
  if (q.is_null(first)) return std::nullopt;
  return GcFacts{q.uint64(first), q.uint64(first + 1), q.uint64(first + 2),
                 read_real(q, first + 3)};
}

Result<RunLedger> read_run_row(const Query& q) {
  RunLedger l;
  RunInfo& i = l.info;
  i.run_id = q.text(0);
  auto state = parse_run_state(q.text(11));
  if (!state) return Error{"run '" + i.run_id + "': " + state.error().message};
  auto baseline = read_reading(q, 18);
  if (!baseline) return Error{"run '" + i.run_id + "' baseline: " + baseline.error().message};
  auto last = read_reading(q, 27);
  if (!last) return Error{"run '" + i.run_id + "' last reading: " + last.error().message};
  i.job = q.text(1);
  i.target.pid = static_cast<pid_t>(q.int64(2));
  i.target.start_time_ticks = q.uint64(3);
  i.owner_uid = static_cast<std::uint32_t>(q.int64(4));
  i.model_bytes = q.uint64(5);
  i.declared_rounds = static_cast<std::uint32_t>(q.int64(6));
  i.hosts = static_cast<std::uint32_t>(q.int64(7));
  i.estimate_bytes = q.uint64(8);
  i.plan = q.text(9);
  i.reservation_id = q.text(10);
  l.state = *state;
  l.started = read_instant(q, 12);
  l.ended = read_optional_instant(q, 14);
  l.peak_bytes = q.uint64(16);
  l.peak_exact = q.int64(17) != 0;
  l.baseline = *baseline;
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

double read_real(const Query& q, int column) {
  return q.is_null(column) ? std::numeric_limits<double>::quiet_NaN() : q.real(column);
}

}  // namespace ramguard
