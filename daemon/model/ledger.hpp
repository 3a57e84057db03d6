#pragma once
// The in-memory ledger of one run: what was marked, read and concluded. Detectors read it
// (pure functions), the store persists it, metrics and status replies render it.

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/census.hpp"
#include "model/reading.hpp"
#include "model/scope.hpp"
#include "model/verdict.hpp"

namespace ramguard {

enum class MarkKind { kPhaseBegin, kPhaseEnd, kRoundEnd, kRunStart, kRunEnd };
enum class RunState { kActive, kEnded, kExited, kLost };

inline const char* run_state_name(RunState s) {
  switch (s) {
    case RunState::kActive:
      return "active";
    case RunState::kEnded:
      return "ended";
    case RunState::kExited:
      return "exited";
    case RunState::kLost:
      return "lost";
  }
  return "active";
}

struct AllocatorFacts {
  std::uint64_t allocated_bytes = 0;
  std::uint64_t active_bytes = 0;
  std::uint64_t resident_bytes = 0;
  std::uint64_t retained_bytes = 0;
};

struct GcFacts {
  std::uint64_t rss_before_bytes = 0;
  std::uint64_t rss_after_bytes = 0;
  std::uint64_t collected_objects = 0;
  double duration_seconds = 0;
};

// RSS before and after the allocator was asked to return its free memory (malloc_trim(0)).
struct TrimFacts {
  std::uint64_t rss_before_bytes = 0;
  std::uint64_t rss_after_bytes = 0;
  double duration_seconds = 0;
};

// What the coordinator measured in its own process at the run's end (gc probe first, then the
// allocator's statistics, then the trim probe): the release verdict splits what stays resident
// by them.
struct EndFacts {
  std::optional<AllocatorFacts> allocator;
  std::string allocator_name;  // "glibc", "jemalloc" or empty
  std::optional<GcFacts> gc;
  std::optional<TrimFacts> trim;
};

struct MarkRecord {
  std::uint64_t seq = 0;  // 1, 2, ... within the run; the store's key
  MarkKind kind = MarkKind::kPhaseBegin;
  std::string phase;
  std::uint32_t round = 0;
  MemoryReading reading;  // complete reading taken at the mark
  std::optional<AllocatorFacts> allocator;
  std::optional<GcFacts> gc;
};

struct PhaseRecord {
  std::string phase;
  std::uint32_t round = 0;
  Instant begin;
  std::optional<Instant> end;
  std::uint64_t peak_bytes = 0;  // high-water mark at phase end, or the largest sample
  bool peak_exact = false;       // true when the high-water mark was reset at begin
  std::uint64_t plan_bytes = 0;  // the run's plan for this phase (overhead included); 0: no plan
  std::uint64_t allocated_bytes = 0;  // the allocator facts sent with the end mark; 0: none
};

struct BoundaryRecord {
  std::uint32_t round = 0;        // the round that ended
  MemoryReading reading;          // at the round-end mark
  std::uint64_t floor_bytes = 0;  // lowest RSS in the settle window after the mark
  bool settled = false;           // the settle window has passed
  // False when the window was cut short by the run's end, the process's exit or its loss: the
  // floor is then taken from readings before the teardown and cannot clear a warning (the
  // drop may be the teardown's, not recovery). Held in memory only; a restart counts it whole.
  bool window_complete = true;
  std::optional<AllocatorFacts> allocator;
  std::optional<GcFacts> gc;
  // Tree scope: each process's counted memory at the round-end mark (kept in memory for the
  // growth verdicts' attribution; not stored).
  std::vector<ProcessShare> processes;

  // The RSS floor: floor_bytes once settled, else the mark reading's RSS.
  std::uint64_t rss_floor_bytes() const {
    return settled && floor_bytes > 0 ? floor_bytes : reading.rss_bytes;
  }
  // The floor of the memory that counts: the RSS floor less what of the mark reading does not
  // count (page cache, a cgroup's kernel memory), plus swap. What every growth detector, the
  // classification and the floor metric use.
  std::uint64_t counted_floor_bytes() const {
    const std::uint64_t floor = rss_floor_bytes();
    const std::uint64_t uncounted = std::min(reading.resident_uncounted_bytes(), floor);
    return floor - uncounted + reading.swap_bytes;
  }
};

// The round boundaries a run no longer holds in memory (the store keeps every one): how many,
// which rounds, and their settled floors' range, so a long run's footprint and its status
// reply stay bounded.
struct BoundarySummary {
  std::uint64_t count = 0;
  std::uint32_t first_round = 0;
  std::uint32_t last_round = 0;
  std::uint64_t first_floor_bytes = 0;
  std::uint64_t min_floor_bytes = 0;
  std::uint64_t max_floor_bytes = 0;

  void add(const BoundaryRecord& b) {
    if (count == 0) {
      first_round = b.round;
      first_floor_bytes = min_floor_bytes = max_floor_bytes = b.floor_bytes;
    }
    ++count;
    last_round = b.round;
    min_floor_bytes = b.floor_bytes < min_floor_bytes ? b.floor_bytes : min_floor_bytes;
    max_floor_bytes = b.floor_bytes > max_floor_bytes ? b.floor_bytes : max_floor_bytes;
  }
};

// The ended phases of one name a run no longer holds (the store keeps every one): how many,
// the largest peak among them and their time, so a status still says what each phase cost.
struct PhaseTotals {
  std::uint64_t count = 0;
  std::uint64_t max_peak_bytes = 0;
  double total_seconds = 0;

  void add(const PhaseRecord& p) {
    ++count;
    max_peak_bytes = p.peak_bytes > max_peak_bytes ? p.peak_bytes : max_peak_bytes;
    if (p.end) total_seconds += seconds_between(p.begin, *p.end);
  }
};

struct RunInfo {
  std::string run_id;
  std::string job;
  std::map<std::string, std::string> labels;
  TargetId target;
  std::uint32_t owner_uid = 0;
  std::uint64_t model_bytes = 0;
  std::uint32_t declared_rounds = 0;
  std::uint32_t hosts = 0;
  std::uint64_t estimate_bytes = 0;  // from the claimed reservation, 0 if none
  std::string plan;
  std::string reservation_id;
  // What the run measures (the cgroup scope: the memory cgroup at cgroup_dir). The PID's exit
  // ends the run whatever its scope.
  Scope scope = Scope::kProcess;
  std::string cgroup_dir;
};

struct RunLedger {
  RunInfo info;
  RunState state = RunState::kActive;
  Instant started;
  std::optional<Instant> ended;
  MemoryReading baseline;
  MemoryReading last;
  std::uint64_t peak_bytes = 0;  // exact where possible: max of high-water marks and samples
  bool peak_exact = false;
  // A running run holds its newest marks, phases, boundaries and verdicts (RunParams says how
  // many); a ledger read from the store holds all of them and the counts below are 0.
  std::vector<MarkRecord> marks;
  std::vector<PhaseRecord> phases;
  std::vector<BoundaryRecord> boundaries;
  std::vector<Verdict> verdicts;
  std::uint64_t earlier_marks = 0;     // marks before marks.front(), no longer held
  BoundarySummary earlier_boundaries;  // boundaries before boundaries.front(), no longer held
  std::uint64_t earlier_phases = 0;    // ended phases no longer held
  std::map<std::string, PhaseTotals> earlier_phase_totals;  // the same, by phase name
  std::uint64_t earlier_verdicts = 0;  // verdicts before verdicts.front(), no longer held
  // The worst of those (ramguard/base/verdict_rank.hpp), so a status still shows it.
  std::optional<Verdict> worst_earlier_verdict;
  // The client's censuses, oldest first (a running run keeps the newest kCensusHeld).
  std::vector<CensusRecord> censuses;

  std::uint64_t mark_count() const { return earlier_marks + marks.size(); }
  std::uint64_t boundary_count() const { return earlier_boundaries.count + boundaries.size(); }
  std::uint64_t phase_count() const { return earlier_phases + phases.size(); }
};

// The run as a metrics target: its job and its id.
inline TargetRef target_ref(const RunLedger& ledger) {
  return TargetRef{ledger.info.job, ledger.info.run_id, ledger.info.owner_uid};
}

}  // namespace ramguard
