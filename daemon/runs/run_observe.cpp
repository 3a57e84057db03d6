// Periodic readings of a run: samples, peaks, budget, runaway and release checks, and the one
// place verdicts are emitted to the ledger, the store, the metrics and the log.
#include <algorithm>

#include "common/log.hpp"
#include "metrics/exporter.hpp"
#include "runs/run_registry.hpp"
#include "store/store.hpp"
#include "verdicts/budget.hpp"
#include "verdicts/release.hpp"
#include "verdicts/runaway.hpp"

namespace ramguard {

void RunRegistry::on_reading(const std::string& run_id, const Result<MemoryReading>& reading) {
  Run* run = find_mut(run_id);
  if (run == nullptr || run->key == 0) return;
  if (!reading) {
    // The exit watcher normally reports an exit first; this covers a kernel without pidfds.
    if (metrics_ != nullptr) metrics_->set_target_up(run->ledger.info.job, false, "unreadable");
    if (run->exit_watch == 0 && reading.error().message.find("exited") != std::string::npos) {
      on_exit(run_id, ExitInfo{.detail = reading.error().message});
    }
    return;
  }
  run->samples.add(*reading);
  observe(*run, *reading);
  ++run->ticks;
  if (run->active()) {
    if (params_.peak_refresh_ticks != 0 && run->ticks % params_.peak_refresh_ticks == 0) {
      refresh_peak(*run);
    }
    check_budget(*run);
    check_runaway(*run);
  } else if (!run->release_decided) {
    check_release(*run, reading->at);
  }
  if (params_.store_flush_ticks != 0 && run->ticks % params_.store_flush_ticks == 0) {
    flush_progress(*run);
  }
}

// Every reading, periodic or at a mark, passes here.
void RunRegistry::observe(Run& run, const MemoryReading& reading) {
  RunLedger& ledger = run.ledger;
  ledger.last = reading;
  if (run.active()) {
    for (std::size_t i : run.open_phases) {
      auto& phase = ledger.phases[i];
      phase.peak_bytes = std::max(phase.peak_bytes, reading.rss_bytes);
    }
    ledger.peak_bytes = std::max(ledger.peak_bytes, reading.rss_bytes);
  }
  run.pending_min_rss =
      std::min(run.pending_min_rss.value_or(reading.rss_bytes), reading.rss_bytes);
  run.pending_max_rss =
      std::max(run.pending_max_rss.value_or(reading.rss_bytes), reading.rss_bytes);
  if (metrics_ != nullptr) {
    metrics_->observe_reading(ledger.info.job, reading);
    metrics_->observe_peak(ledger.info.job, ledger.peak_bytes, ledger.peak_exact);
  }
}

// Between marks the high-water mark is read without a reset: the run's peak stays exact.
void RunRegistry::refresh_peak(Run& run) {
  auto complete = sampler_.read_now(run.key, /*complete=*/true);
  if (!complete) return;
  fold_hwm(run, *complete);
  observe(run, *complete);
}

void RunRegistry::check_budget(Run& run) {
  const BudgetAssessment budget = assess_budget(budget_input(run.ledger), params_.detectors);
  if (budget.state != run.budget_state && budget.state != BudgetState::kOk && budget.verdict) {
    // Headroom after over-budget is no news; over-budget after headroom is.
    if (!(run.budget_state == BudgetState::kOver && budget.state == BudgetState::kHeadroom)) {
      emit(run, *budget.verdict);
    }
  }
  if (budget.state > run.budget_state) run.budget_state = budget.state;
}

void RunRegistry::check_runaway(Run& run) {
  if (run.runaway_flagged) return;
  const auto readings = run.samples.readings_since(run.last_mark_at);
  std::string phase;
  if (!run.open_phases.empty()) phase = run.ledger.phases[run.open_phases.back()].phase;
  const RunawayAssessment runaway = assess_runaway(readings, phase, run.current_round(),
                                                   run.ledger.info.model_bytes, params_.detectors);
  if (runaway.runaway && runaway.verdict) {
    run.runaway_flagged = true;
    emit(run, *runaway.verdict);
  }
}

void RunRegistry::check_release(Run& run, const Instant& now) {
  if (run.release_decided || !run.ledger.ended || run.ledger.state != RunState::kEnded) return;
  const auto after = run.samples.readings_since(*run.ledger.ended);
  ReleaseInput input;
  input.baseline = run.ledger.baseline;
  input.ended = *run.ledger.ended;
  input.after_end = after;
  input.now = now;
  input.exited = run.exited_at;
  input.model_bytes = run.ledger.info.model_bytes;
  const ReleaseAssessment release = assess_release(input, params_.detectors);
  if (release.state == ReleaseState::kPending) return;
  run.release_decided = true;
  if (release.verdict) emit(run, *release.verdict);
  stop_sampling(run);
}

void RunRegistry::emit(Run& run, Verdict verdict, std::vector<Verdict>* out) {
  RunLedger& ledger = run.ledger;
  ledger.verdicts.push_back(verdict);
  ++verdicts_emitted_;
  store_write(run, "verdict", [&] { return store_->save_verdict(ledger.info.run_id, verdict); });
  if (metrics_ != nullptr) {
    metrics_->observe_verdict(ledger.info.job, verdict.kind, verdict.severity);
    if (verdict.severity != Severity::kInfo || verdict.cleared) {
      metrics_->set_active_warning(ledger.info.job, verdict.kind,
                                   !verdict.cleared && !verdict.passed);
    }
  }
  const log::Level level =
      verdict.severity == Severity::kInfo || verdict.cleared
          ? log::Level::kInfo
          : (verdict.severity == Severity::kWarning ? log::Level::kWarning : log::Level::kError);
  log::write(level, "verdict",
             {{"kind", verdict.kind},
              {"severity", severity_name(verdict.severity)},
              {"passed", verdict.passed},
              {"cleared", verdict.cleared},
              {"run", ledger.info.run_id},
              {"job", ledger.info.job},
              {"round", verdict.round},
              {"phase", verdict.phase},
              {"summary", verdict.summary}});
  if (out != nullptr) out->push_back(std::move(verdict));
}

void RunRegistry::flush_progress(Run& run) {
  if (!run.pending_max_rss) return;
  StoredSample sample;
  sample.at_unix_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(run.ledger.last.at.wall).count();
  sample.rss_bytes = run.ledger.last.rss_bytes;
  sample.min_rss_bytes = *run.pending_min_rss;
  sample.max_rss_bytes = *run.pending_max_rss;
  sample.anon_bytes = run.ledger.last.anon_bytes;
  sample.file_bytes = run.ledger.last.file_bytes;
  run.pending_min_rss.reset();
  run.pending_max_rss.reset();
  store_write(run, "progress", [&]() -> Status {
    return store_->atomically([&]() -> Status {
      if (auto s = store_->append_samples(run.ledger.info.run_id, std::span(&sample, 1)); !s) {
        return s;
      }
      if (!run.active()) return ok_status();
      return store_->update_progress(run.ledger.info.run_id, run.ledger.peak_bytes,
                                     run.ledger.peak_exact, run.ledger.last);
    });
  });
}

// The store is optional: a failed write is logged and counted, and the run goes on in memory.
bool RunRegistry::store_write(Run& run, const char* what, const std::function<Status()>& write) {
  if (store_ == nullptr) {
    run.store_ok = false;
    return false;
  }
  if (auto s = write(); !s) {
    run.store_ok = false;
    // The store logs its degraded state once (rate-limited); a line per failed write would flood.
    log::debug("store.write_failed",
               {{"run", run.ledger.info.run_id}, {"what", what}, {"reason", s.error().message}});
    return false;
  }
  return true;
}

}  // namespace ramguard
