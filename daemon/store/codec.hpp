#pragma once
// How ledger values map to columns: enum names as text, readings as 9 columns, instants as
// monotonic + wall nanoseconds, optional client facts as nullable columns. Reading back checks
// the text it finds, so a hand-edited database gives an Error, not a wrong value.

#include <optional>
#include <string_view>

#include "model/ledger.hpp"
#include "model/reading.hpp"
#include "model/verdict.hpp"
#include "ramguard/base/result.hpp"
#include "store/sqlite_db.hpp"

namespace ramguard {

const char* mark_kind_name(MarkKind kind);
Result<MarkKind> parse_mark_kind(std::string_view text);
Result<RunState> parse_run_state(std::string_view text);
Result<Severity> parse_severity(std::string_view text);
const char* reading_source_name(ReadingSource source);
Result<ReadingSource> parse_reading_source(std::string_view text);

inline constexpr int kInstantColumns = 2;  // mono_ns, wall_ns
inline constexpr int kReadingColumns = 9;  // mono, wall, source, rss, anon, file, shmem, swap, hwm
inline constexpr int kAllocatorColumns = 4;  // allocated, active, resident, retained
inline constexpr int kGcColumns = 4;         // rss_before, rss_after, collected, duration_s

void bind_instant(Query& q, int first, const Instant& at);
void bind_instant(Query& q, int first, const std::optional<Instant>& at);
Instant read_instant(const Query& q, int first);
std::optional<Instant> read_optional_instant(const Query& q, int first);

void bind_reading(Query& q, int first, const MemoryReading& r);
Result<MemoryReading> read_reading(const Query& q, int first);

void bind_allocator(Query& q, int first, const std::optional<AllocatorFacts>& facts);
std::optional<AllocatorFacts> read_allocator(const Query& q, int first);
void bind_gc(Query& q, int first, const std::optional<GcFacts>& facts);
std::optional<GcFacts> read_gc(const Query& q, int first);

// A row of `SELECT runs.* ...` (columns in schema order; later migrations only append) as a
// ledger without labels, marks, phases, boundaries and verdicts.
Result<RunLedger> read_run_row(const Query& q);

// SQLite turns NaN into NULL; these keep NaN a NaN.
void bind_real(Query& q, int index, double value);
double read_real(const Query& q, int column);

}  // namespace ramguard
