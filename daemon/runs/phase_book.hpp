#pragma once
// A run's phases: which are open (nested phases stack), the largest peak of each name ended,
// the names begun (bounded), and what was already said of them once (a forecast at a begin, a
// room forecast by cap and kind, a plan check, a phase gap over its target). Ended phases past
// the held count are folded into totals by name; open ones stay whatever their age.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "model/ledger.hpp"
#include "ramguard/base/result.hpp"
#include "runs/run_params.hpp"
#include "runs/said_once.hpp"
#include "verdicts/phase_room.hpp"
#include "verdicts/plan_yardstick.hpp"

namespace ramguard {

class PhaseBook {
 public:
  // ledger: the run's, whose phases this book opens and closes (it outlives the book).
  PhaseBook(RunLedger& ledger, const RunParams& params) : ledger_(ledger), params_(params) {}

  const std::vector<std::size_t>& open() const { return open_; }  // indexes into ledger phases
  bool is_open(const std::string& phase) const;
  // Why `phase` cannot begin now (it is open, or would be one name more than the limit).
  Status can_begin(const std::string& phase) const;
  // Why `phase` cannot end now (it is not open).
  Status can_end(const std::string& phase) const;
  PhaseRecord& begin(PhaseRecord phase);
  // Ends the open `phase` at `at` (can_end said it may) and keeps its name's largest peak.
  PhaseRecord& end(const std::string& phase, Instant at);
  // A run that ends mid-phase closes its open phases.
  std::vector<const PhaseRecord*> close_all(Instant at);
  // A peak within every open phase (a high-water mark since the innermost one began, a reading).
  void fold_peak(std::uint64_t peak_bytes);

  std::string open_names() const;  // "none" without an open phase
  std::string current() const;     // the innermost open phase; empty between phases
  // What the run's plan (and earlier rounds) say `phase` holds; nullopt without a plan.
  std::optional<PhaseYardstick> yardstick(const std::string& phase) const;
  // At a phase's first begin: a warning when the run's plan does not list it; else empty.
  std::string plan_warning(const std::string& phase);
  // At a begin, before the memory is allocated: the plan's forecast, once per phase name, and
  // the forecast against the node's and the cgroup's room (counted_bytes: the run's now),
  // once per phase, cap and verdict kind (the caps change as the run goes).
  std::vector<Verdict> forecasts(const std::string& phase, std::uint32_t round,
                                 const std::optional<PhaseRoom>& room, std::uint64_t counted_bytes,
                                 Instant now, const DetectorParams& detectors);
  // True the first time a phase gap over its target (by rule and `from` mark) is seen.
  bool gap_first(std::size_t rule_index, const Instant& from_at);
  // Gaps are judged over the held marks only: those reported before `oldest` are done.
  void forget_gaps_before(const Instant& oldest);

  // A phase read back on resume, in order.
  void resumed(PhaseRecord phase);
  // The open phases from the ledger's (resume).
  void reopen();
  // exact: down to the held count, not only past a quarter more (a resumed run read whole).
  void trim(bool exact = false);

 private:
  using GapKey = std::pair<std::size_t, std::uint64_t>;  // rule, the `from` mark's time

  RunLedger& ledger_;
  const RunParams& params_;
  std::vector<std::size_t> open_;               // indexes into ledger_.phases
  std::map<std::string, std::uint64_t> peaks_;  // largest peak of each ended phase
  std::set<std::string> names_;                 // every name begun (at most max_phase_names)
  SaidOnce<std::string> forecast_phases_;       // phases already forecast at a begin
  SaidOnce<std::tuple<std::string, RoomCap, std::string>> room_forecasts_;
  SaidOnce<std::string> checked_names_;  // phases already checked against the plan
  SaidOnce<GapKey> gaps_reported_;       // phase gaps over target already turned into verdicts
};

}  // namespace ramguard
