#pragma once
// Between-round growth: is the coordinator's settled floor climbing from round to round?
//
// The signal. Each settled round boundary gives a FloorPoint. Growth is judged on the
// anonymous part of the floor, growth_bytes = max(0, RSS floor - file-backed) + swap, i.e.
// anon + shmem + swap: page cache from checkpoint saves is reclaimable and is no leak
// (scenario E of tests/scenarios/README.md). Where the reading has no split (file = 0) the
// whole RSS floor counts. The RSS floor, the file-backed part and their slopes are reported
// alongside.
//
// The rules, evaluated for every prefix of the series (so the whole result is a pure function
// of the floors; the state at the last floor is the answer):
//  1. Warm-up: floors of the first `warmup_rounds` rounds are not judged; the floor of the
//     last warm-up round is the reference (round 1 with the default 1). With warmup_rounds =
//     0 the first floor is the reference.
//  2. Step: one round's growth >= growth_min_bytes that also lifts the floor more than
//     plateau_band_bytes above every earlier judged floor warns at once (scenario H: the
//     baseline build's 14.1 -> 17.3 GB warns after round 2). Rising again within a range
//     already seen (a saw-tooth from periodic cleanup) does not.
//  3. Leak: over the last `fit_rounds` judged floors, the least-squares slope is >=
//     growth_min_bytes per round with R^2 >= min_fit_r2, at least 3 of the steps in the window
//     are growth, and the growth is not decelerating (the last step is at least half the
//     slope). A leak outranks a warning.
//  4. Budget projection: the slope fitted over the last `projection_fit_rounds` judged floors
//     (>= 4 floors, R^2 >= min_fit_r2, slope > 0) extrapolated from the last RSS floor reaches
//     budget_bytes at or before the declared round count: warning, however small the slope
//     (scenario C).
//  5. Persistence: a warning or leak stays until growth stops: the last `plateau_rounds`
//     floors lie within plateau_band_bytes (plateau), or a floor drops by more than the band.
//     Only a floor from a whole settle window of a live run can stop it: a window cut short by
//     the run's end or the process's exit (teardown is not recovery), or a floor the client's
//     own gc probe lowered by more than the band (the guard's collection, not the program's),
//     leaves the warning standing.
//  6. Plateau: growth stopped after the floor had risen >= growth_min_bytes above the
//     reference: state plateau (info, "plateau at ..."), and any warning is cleared. A flat
//     series that never rose is state none and says nothing.
//  Slopes are in bytes per round (x = round number); copies per round when model_bytes is
//  known; the projected round is given when rounds are declared or the state is a leak.
//
// Callers: at each settled round boundary, add the floor to the run's GrowthTracker (constant
// cost per floor: every rule looks at a bounded window plus running aggregates), then emit
// new_growth_verdicts(previous, current) so a run does not repeat the same warning every round.

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <vector>

#include "model/ledger.hpp"
#include "model/verdict.hpp"
#include "verdicts/params.hpp"

namespace ramguard {

struct FloorPoint {
  std::uint32_t round = 0;
  std::uint64_t rss_bytes = 0;     // settled RSS floor
  std::uint64_t file_bytes = 0;    // file-backed part (periodic readings: file + shmem)
  std::uint64_t growth_bytes = 0;  // the judged signal: anon + shmem + swap, less ...
  // ... the free memory the C allocator keeps (allocator facts sent with the round end):
  // memory the application freed is not the application's growth.
  std::uint64_t allocator_free_bytes = 0;
  // What the client's own gc probe freed just before the round-end mark (rss before - after
  // gc.collect()): a drop the guard caused, not the coordinator's recovery.
  std::uint64_t probe_drop_bytes = 0;
  bool window_complete = true;  // the whole settle window of a live run (BoundaryRecord)
  Instant at;
};

// From one boundary: floor_bytes when settled (else the mark reading's RSS), split from the
// mark reading; growth_bytes is counted_floor_bytes less what the allocator keeps free.
FloorPoint floor_point(const BoundaryRecord& boundary);
// The settled boundaries of a run, in order.
std::vector<FloorPoint> settled_floors(const RunLedger& ledger);

struct GrowthContext {
  std::uint64_t model_bytes = 0;      // 0: unknown, no copies figures
  std::uint32_t declared_rounds = 0;  // 0: not declared
};
GrowthContext growth_context(const RunInfo& info);

enum class GrowthState { kNone, kWarning, kLeak, kPlateau };
const char* growth_state_name(GrowthState state);

struct GrowthAssessment {
  GrowthState state = GrowthState::kNone;
  std::uint32_t round = 0;        // last floor's round; 0 with no floors
  std::uint32_t since_round = 0;  // round at which the current state began
  Instant at;                     // the last floor's time
  std::string reason;             // "step", "fit", "budget", "continues", "plateau", ""
  std::uint64_t rss_floor_bytes = 0;
  std::uint64_t growth_floor_bytes = 0;
  std::uint64_t file_bytes = 0;
  double step_bytes = 0;             // last round's change of the signal
  double slope_bytes_per_round = 0;  // fit over the leak window (>= 2 judged floors)
  double fit_r2 = 0;
  double rss_slope_bytes_per_round = 0;
  double file_slope_bytes_per_round = 0;
  double copies_per_round = -1;      // < 0: model size unknown
  double projected_round = 0;        // round at which the budget is reached; 0: none
  bool sawtooth = false;             // a drop of more than the band happened after growth
  bool grew_past_threshold = false;  // this round's step >= growth_min_bytes
  // While growing: the floor before the warning began, and the judged growth since it.
  std::uint32_t since_base_round = 0;
  std::uint64_t since_base_bytes = 0;
  double total_since_bytes = 0;
  std::vector<Verdict> verdicts;  // the verdicts describing the current state
};

// The assessment at the last of `floors`: a GrowthTracker fed every floor in order.
GrowthAssessment assess_growth(std::span<const FloorPoint> floors, const GrowthContext& context,
                               const DetectorParams& params);

// The rules above, evaluated one floor at a time. Keeps the reference floor, the running
// maximum of the judged signal, the state and the newest floors that any rule's window reaches
// (fit_rounds, projection_fit_rounds, twice plateau_rounds), so a floor costs the same at round
// 10,000 as at round 10 and the result equals assess_growth over the whole series.
class GrowthTracker {
 public:
  // Adds the next settled floor (rounds in increasing order) and returns the assessment at it.
  const GrowthAssessment& add(const FloorPoint& floor, const GrowthContext& context,
                              const DetectorParams& params);
  const GrowthAssessment& current() const { return assessment_; }
  std::size_t floors_seen() const { return count_; }

 private:
  std::deque<FloorPoint> window_;  // the newest floors; window_.back() has index count_ - 1
  std::size_t count_ = 0;
  FloorPoint reference_;
  double max_judged_growth_ = 0;  // over the floors from the reference up to the previous one
  GrowthState state_ = GrowthState::kNone;
  std::string reason_;
  std::uint32_t since_ = 0;
  bool sawtooth_ = false;
  std::uint32_t since_base_round_ = 0;
  std::uint64_t since_base_bytes_ = 0;
  GrowthAssessment assessment_;
};

// The verdicts to emit when moving from `previous` to `current`: with the state unchanged,
// an update of a standing warning/leak in a round that grew past the threshold, else nothing;
// the new warning/leak; a `cleared` verdict of the previous kind when growth
// stopped, followed by the plateau verdict when there is one.
std::vector<Verdict> new_growth_verdicts(const GrowthAssessment& previous,
                                         const GrowthAssessment& current);

}  // namespace ramguard
