// Restart recovery: what the store says was active either resumes (same PID and start time
// still alive) or ends `lost`. Reservations come back with their runs.
#include <algorithm>

#include "common/log.hpp"
#include "metrics/exporter.hpp"
#include "runs/run_registry.hpp"
#include "store/store.hpp"
#include "verdicts/exit.hpp"
#include "verdicts/phase_gap.hpp"

namespace ramguard {

void RunRegistry::recover() {
  if (store_ == nullptr) return;
  auto active = store_->load_active_runs();
  if (!active) {
    log::error("recovery.failed", {{"reason", active.error().message}});
    return;
  }
  std::vector<std::string> resumed_ids;
  for (RunLedger& ledger : *active) {
    const std::string run_id = ledger.info.run_id;
    auto run = std::make_unique<Run>();
    run->samples = SampleSeries(params_.series);
    run->ledger = std::move(ledger);
    for (std::size_t i = 0; i < run->ledger.phases.size(); ++i) {
      if (!run->ledger.phases[i].end) run->open_phases.push_back(i);
    }
    for (const auto& b : run->ledger.boundaries)
      run->rounds_ended = std::max(run->rounds_ended, b.round);
    run->last_mark_at =
        run->ledger.marks.empty() ? run->ledger.started : run->ledger.marks.back().reading.at;
    run->exact_peaks = run->ledger.peak_exact;
    auto key = sampler_.add(
        run->ledger.info.target,
        [this, run_id, alive = alive_](const TargetId&, const Result<MemoryReading>& r) {
          if (*alive) on_reading(run_id, r);
        });
    Run& ref = *run;
    runs_[run_id] = std::move(run);
    if (!key) {
      const Instant now = clock_.now();
      finish(ref, RunState::kLost, now);
      emit(ref, lost_verdict(ref.ledger, now));
      ref.forget_at = now;
      ref.forget_at->monotonic += params_.ended_retention;
      log::warning(
          "recovery.lost",
          {{"run", run_id}, {"pid", ref.ledger.info.target.pid}, {"reason", key.error().message}});
      continue;
    }
    ref.key = *key;
    auto watched = exits_.watch(ref.ledger.info.target, [this, run_id, alive = alive_](ExitInfo e) {
      if (*alive) on_exit(run_id, e);
    });
    if (watched) ref.exit_watch = *watched;
    if (!watched)
      log::warning("run.exit_watch_unavailable",
                   {{"run", run_id}, {"reason", watched.error().message}});
    // Gaps judged before the restart are not judged again.
    for (const PhaseGap& gap : measure_phase_gaps(ref.ledger.marks, params_.detectors).gaps) {
      if (gap.over) {
        ref.gaps_reported.insert(
            {gap.rule_index, static_cast<std::uint64_t>(gap.from_at.monotonic.count())});
      }
    }
    // Boundaries that were still settling when the daemon died: settle on what we have.
    for (auto& b : ref.ledger.boundaries) b.settled = true;
    ref.growth = {};
    evaluate_growth(ref);
    resumed_ids.push_back(run_id);
    log::info("recovery.resumed", {{"run", run_id},
                                   {"job", ref.ledger.info.job},
                                   {"pid", ref.ledger.info.target.pid},
                                   {"marks", ref.ledger.marks.size()}});
  }
  // Reservations: those of resumed runs and unexpired unclaimed ones come back.
  if (auto reservations = store_->load_reservations()) {
    const auto now_ms =
        std::chrono::duration_cast<std::chrono::milliseconds>(clock_.now().wall).count();
    for (const StoredReservation& r : *reservations) {
      const bool claimed_by_resumed =
          !r.run_id.empty() &&
          std::find(resumed_ids.begin(), resumed_ids.end(), r.run_id) != resumed_ids.end();
      const bool live_lease = r.run_id.empty() && r.expires_wall_ms > now_ms;
      if (claimed_by_resumed || live_lease) {
        ReservationRecord record{r.id, r.job, r.bytes, "restored", r.run_id, r.owner_uid};
        if (auto s = admission_.restore(record); !s) {
          log::warning("recovery.reservation_dropped",
                       {{"reservation", r.id}, {"reason", s.error().message}});
        }
      }
    }
  }
  sync_reservations();
  if (metrics_ != nullptr) {
    metrics_->set_runs_active(active_runs());
    metrics_->set_reserved_bytes(admission_.reserved_bytes());
  }
}

}  // namespace ramguard
