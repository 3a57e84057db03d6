#pragma once
// One run as the registry holds it: the ledger (what is reported and stored) plus the live
// state needed to keep it exact (open phases, the high-water mark since the last reset,
// pending settle and release checks).

#include <asio/steady_timer.hpp>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "runs/ledger.hpp"
#include "runs/sample_series.hpp"
#include "sampling/exit_watcher.hpp"
#include "sampling/sampler.hpp"
#include "verdicts/budget.hpp"
#include "verdicts/growth.hpp"

namespace ramguard {

struct Run {
  RunLedger ledger;
  SampleSeries samples;
  TargetKey key = 0;                    // 0: no longer sampled
  ExitWatcher::WatchId exit_watch = 0;  // 0: exit not watched (any more)
  bool end_on_exit = false;  // a clean exit (code 0) ends the run normally (ramguard exec)
  bool exact_peaks = false;  // the high-water mark can be reset: phase peaks are exact
  std::vector<std::size_t> open_phases;  // indexes into ledger.phases
  std::uint32_t rounds_ended = 0;
  Instant last_mark_at;
  GrowthAssessment growth;
  BudgetState budget_state = BudgetState::kOk;
  bool runaway_flagged = false;  // once per round
  // Phase gaps over target already turned into verdicts, by rule and the `from` mark's seq.
  std::set<std::pair<std::size_t, std::uint64_t>> gaps_reported;
  std::unique_ptr<asio::steady_timer> settle_timer;
  std::optional<Instant> exited_at;
  bool release_decided = false;
  std::optional<Instant> forget_at;  // ended runs leave memory (not the store) after this
  std::uint32_t ticks = 0;
  // Downsampled samples waiting to be stored: min/max/last since the last flush.
  std::optional<std::uint64_t> pending_min_rss, pending_max_rss;
  bool store_ok = true;  // every write for this run so far succeeded

  bool active() const { return ledger.state == RunState::kActive; }
  std::uint32_t current_round() const { return rounds_ended + 1; }
};

}  // namespace ramguard
