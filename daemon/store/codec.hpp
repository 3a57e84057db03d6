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

// The names of a group's columns, for reading it back by name.
struct InstantNames {
  ColumnName mono_ns;
  ColumnName wall_ns;
};
struct ReadingNames {
  InstantNames at;
  ColumnName source;
  ColumnName rss;
  ColumnName anon;
  ColumnName file;
  ColumnName shmem;
  ColumnName swap;
  ColumnName hwm;
};
struct AllocatorNames {
  ColumnName allocated;
  ColumnName active;
  ColumnName resident;
  ColumnName retained;
};
struct GcNames {
  ColumnName rss_before;
  ColumnName rss_after;
  ColumnName collected;
  ColumnName duration_s;
};

// A mark's or boundary's reading and facts (the r_*, alloc_* and gc_* columns).
inline constexpr ReadingNames kRecordReading = {{"r_mono_ns", "r_wall_ns"},
                                                "r_source",
                                                "r_rss",
                                                "r_anon",
                                                "r_file",
                                                "r_shmem",
                                                "r_swap",
                                                "r_hwm"};
inline constexpr AllocatorNames kRecordAllocator = {"alloc_allocated", "alloc_active",
                                                    "alloc_resident", "alloc_retained"};
inline constexpr GcNames kRecordGc = {"gc_rss_before", "gc_rss_after", "gc_collected",
                                      "gc_duration_s"};
// Column lists of those columns and of a runs row (read_run_row's), for SELECTs and INSERTs.
inline constexpr std::string_view kRecordFactsSelect =
    "r_mono_ns, r_wall_ns, r_source, r_rss, r_anon, r_file, r_shmem, r_swap, r_hwm, "
    "alloc_allocated, alloc_active, alloc_resident, alloc_retained, gc_rss_before, gc_rss_after, "
    "gc_collected, gc_duration_s";
inline constexpr std::string_view kRunSelect =
    "run_id, job, target_pid, target_start_ticks, owner_uid, model_bytes, declared_rounds, hosts, "
    "estimate_bytes, plan, reservation_id, state, started_mono_ns, started_wall_ns, "
    "ended_mono_ns, ended_wall_ns, peak_bytes, peak_exact, base_mono_ns, base_wall_ns, "
    "base_source, base_rss, base_anon, base_file, base_shmem, base_swap, base_hwm, last_mono_ns, "
    "last_wall_ns, last_source, last_rss, last_anon, last_file, last_shmem, last_swap, last_hwm";

void bind_instant(Query& q, int first, const Instant& at);
void bind_instant(Query& q, int first, const std::optional<Instant>& at);
Instant read_instant(const Row& row, InstantNames names);
std::optional<Instant> read_optional_instant(const Row& row, InstantNames names);

void bind_reading(Query& q, int first, const MemoryReading& r);
Result<MemoryReading> read_reading(const Row& row, const ReadingNames& names);

void bind_allocator(Query& q, int first, const std::optional<AllocatorFacts>& facts);
std::optional<AllocatorFacts> read_allocator(const Row& row,
                                             const AllocatorNames& names = kRecordAllocator);
void bind_gc(Query& q, int first, const std::optional<GcFacts>& facts);
std::optional<GcFacts> read_gc(const Row& row, const GcNames& names = kRecordGc);

// A row with kRunSelect's columns as a ledger without labels, marks, phases, boundaries and
// verdicts.
Result<RunLedger> read_run_row(const Row& row);

// SQLite turns NaN into NULL; these keep NaN a NaN.
void bind_real(Query& q, int index, double value);
double read_real(const Row& row, ColumnName column);

}  // namespace ramguard
