#pragma once
// A run's round boundaries as they settle: the one boundary whose settle window is open, the
// floor taken at its end (the lowest RSS since the round-end mark: memory freed just after the
// mark is not growth), and the growth judged on the settled floors.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "model/ledger.hpp"
#include "runs/run_params.hpp"
#include "runs/sample_series.hpp"
#include "verdicts/growth.hpp"

namespace ramguard {

class SettleWindow {
 public:
  // ledger: the run's, whose boundaries settle here (it outlives the window).
  SettleWindow(RunLedger& ledger, const RunParams& params) : ledger_(ledger), params_(params) {}

  // A round-end mark's boundary joins the ledger and opens its window (a window still open was
  // settled by the caller first).
  const BoundaryRecord& open(BoundaryRecord boundary);
  std::optional<std::size_t> settling() const { return settling_; }
  // When the open window ends; nullopt when none is open.
  std::optional<Instant> due() const;
  bool due_by(Instant now) const;

  // Where a window open at the run's end, exit or loss (at `cut`) settles.
  struct Cut {
    std::size_t index = 0;
    Instant at;
    bool full_window = false;
  };
  // At its end when the window had run its length before the cut (full when the run is still
  // active); else at the cut (readings_until_cut) or at its round-end mark (the mark's reading
  // alone). nullopt when no window is open.
  std::optional<Cut> before_teardown(Instant cut, bool readings_until_cut, bool active) const;

  // Closes the open window; true when boundary `index` is still to settle.
  bool close(std::size_t index);
  // Settles boundary `index` (close said it may) on the readings up to `now` and adds its
  // floor to the growth judged (full_window: the window of a live run ran its whole length;
  // only such a floor may clear a growth warning).
  const BoundaryRecord& settle(std::size_t index, Instant now, const SampleSeries& samples,
                               bool full_window, const DetectorParams& detectors);
  // What changed in the growth assessment since the last call, and the last settled round's
  // class once; each attributed to the processes that grew (census not named).
  std::vector<Verdict> judge_growth(const DetectorParams& detectors);

  // A boundary read back on resume: one still settling settles on what was read; what the
  // settled ones say was judged before the restart (judge_growth says only what others change).
  void resumed(BoundaryRecord boundary, const DetectorParams& detectors);
  // A growth_class verdict read back on resume: its round is not classified again.
  void classified_before(std::uint32_t round) {
    classified_round_ = std::max(classified_round_, round);
  }
  // Past the held count the oldest settled boundaries go into the ledger's totals (the one
  // settling stays). exact: down to the held count (a resumed run read whole).
  void trim(bool exact = false);

 private:
  RunLedger& ledger_;
  const RunParams& params_;
  std::optional<std::size_t> settling_;  // the boundary whose settle window is open
  GrowthTracker growth_tracker_;
  GrowthAssessment growth_;             // the assessment the last verdicts were emitted for
  std::uint32_t classified_round_ = 0;  // the last round with a growth_class verdict
};

}  // namespace ramguard
