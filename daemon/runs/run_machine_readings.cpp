// Periodic readings of a run: samples, peaks, and the budget, runaway and release checks.
#include <algorithm>

#include "common/log.hpp"
#include "ramguard/base/units.hpp"
#include "runs/run_machine.hpp"
#include "verdicts/budget.hpp"
#include "verdicts/describe.hpp"
#include "verdicts/runaway.hpp"

namespace ramguard {

void RunMachine::reading(const MemoryReading& reading, TargetProbe& probe) {
  samples_.add(reading);
  observe(reading, probe.read_timing());
  ++ticks_;
  if (active()) {
    if (params_.peak_refresh_ticks != 0 && ticks_ % params_.peak_refresh_ticks == 0) {
      refresh_peak(probe);
    }
    check_budget();
    check_runaway();
  } else if (!release_.decided()) {
    check_release(reading.at);
  }
  if (params_.store_flush_ticks != 0 && ticks_ % params_.store_flush_ticks == 0) {
    flush_progress();
  }
}

void RunMachine::oom_killed(std::uint64_t count, Instant at) {
  if (!active()) return;
  const std::string phase = phases_.current();
  std::string summary =
      "The kernel's OOM killer killed " + std::to_string(count) +
      (count == 1 ? " process" : " processes") + " in cgroup " + ledger_.info.cgroup_dir +
      " during round " + std::to_string(current_round()) +
      (phase.empty() ? std::string() : " (" + phase + ")") + "; cgroup usage " +
      format_bytes(static_cast<double>(ledger_.last.rss_bytes)) + " (counted " +
      format_bytes(static_cast<double>(ledger_.last.counted_bytes())) + ", page cache " +
      format_bytes(static_cast<double>(ledger_.last.file_bytes)) + "), counted peak " +
      format_bytes(static_cast<double>(ledger_.peak_bytes)) + ".";
  emit(make_verdict(verdict_kind::kOomKill, Severity::kCritical, false, current_round(), phase,
                    std::move(summary),
                    {{"oom_kills", static_cast<double>(count)},
                     {"usage_bytes", static_cast<double>(ledger_.last.rss_bytes)},
                     {"peak_bytes", static_cast<double>(ledger_.peak_bytes)}},
                    at));
}

void RunMachine::unreadable(std::string_view reason) {
  observers_.notify([&](RunObserver& o) { o.target_state(target_ref(ledger_), false, reason); });
}

// Every reading, periodic or at a mark, passes here.
void RunMachine::observe(const MemoryReading& reading, const ReadTiming& timing) {
  ledger_.last = reading;
  if (active()) {
    phases_.fold_peak(reading.counted_bytes());
    ledger_.peak_bytes = std::max(ledger_.peak_bytes, reading.counted_bytes());
  }
  pending_min_rss_ = std::min(pending_min_rss_.value_or(reading.rss_bytes), reading.rss_bytes);
  pending_max_rss_ = std::max(pending_max_rss_.value_or(reading.rss_bytes), reading.rss_bytes);
  observers_.notify([&](RunObserver& o) {
    o.target_reading(target_ref(ledger_), reading, ledger_.peak_bytes, ledger_.peak_exact, timing);
  });
}

// Between marks the high-water mark is read without a reset: the run's peak stays exact.
void RunMachine::refresh_peak(TargetProbe& probe) {
  auto complete = probe.read(/*complete=*/true);
  if (!complete) return;
  fold_hwm(*complete);
  observe(*complete, probe.read_timing());
}

void RunMachine::check_budget() {
  const BudgetAssessment budget = assess_budget(budget_input(ledger_), detectors());
  if (budget.state != budget_state_ && budget.state != BudgetState::kOk && budget.verdict) {
    // Headroom after over-budget is no news; over-budget after headroom is.
    if (!(budget_state_ == BudgetState::kOver && budget.state == BudgetState::kHeadroom)) {
      emit(*budget.verdict);
    }
  }
  if (budget.state > budget_state_) budget_state_ = budget.state;
}

// With a plan, growth is judged against what the phase is expected to hold; without one, by
// its rate.
void RunMachine::check_runaway() {
  if (runaway_flagged_) return;
  const auto readings = samples_.readings_since(last_mark_at_);
  const std::string phase = phases_.current();
  const auto planned = phases_.yardstick(phase);
  const RunawayAssessment runaway =
      planned
          ? assess_runaway_beyond_plan(readings, *planned, phase, current_round(),
                                       ledger_.info.model_bytes, detectors())
          : assess_runaway(readings, phase, current_round(), ledger_.info.model_bytes, detectors());
  if (runaway.runaway && runaway.verdict) {
    runaway_flagged_ = true;
    emit(*runaway.verdict);
  }
}

void RunMachine::check_release(Instant now) {
  if (auto verdict = release_.check(now, samples_, params_.settle, detectors())) {
    emit(with_census(std::move(*verdict)));
  }
}

}  // namespace ramguard
