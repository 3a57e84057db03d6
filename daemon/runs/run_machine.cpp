// A run's lifecycle: start, resume, end, exit, loss, deadlines and the one place verdicts and
// writes leave the machine.
#include "runs/run_machine.hpp"

#include <algorithm>

#include "common/log.hpp"
#include "runs/held_room.hpp"
#include "verdicts/estimate.hpp"
#include "verdicts/exit.hpp"
#include "verdicts/phase_gap.hpp"

namespace ramguard {

RunMachine::RunMachine(const RunParams& params, ObserverSet& observers)
    : params_(params),
      observers_(observers),
      samples_(params.series),
      window_(ledger_, params),
      phases_(ledger_, params),
      release_(ledger_),
      verdicts_(ledger_, params) {}

Result<std::unique_ptr<RunMachine>> RunMachine::start(RunInfo info, bool end_on_exit,
                                                      TargetProbe& probe, const RunParams& params,
                                                      ObserverSet& observers) {
  std::unique_ptr<RunMachine> run(new RunMachine(params, observers));
  run->ledger_.info = std::move(info);
  run->end_on_exit_ = end_on_exit;
  auto baseline = probe.read(/*complete=*/true);
  if (!baseline) return Error{baseline.error().message, ErrorKind::kUnavailable};
  auto reset = probe.reset_hwm();
  run->exact_peaks_ = reset.ok();
  if (!reset) {
    log::warning("run.exact_peaks_unavailable", {{"run", run->run_id()},
                                                 {"pid", run->ledger_.info.target.pid},
                                                 {"reason", reset.error().message}});
  }
  RunLedger& ledger = run->ledger_;
  ledger.started = baseline->at;
  ledger.baseline = *baseline;
  ledger.last = *baseline;
  ledger.peak_bytes = baseline->counted_bytes();
  ledger.peak_exact = run->exact_peaks_;
  run->last_mark_at_ = baseline->at;
  run->samples_.add(*baseline);
  MarkRecord start_mark;
  start_mark.seq = 1;
  start_mark.kind = MarkKind::kRunStart;
  start_mark.reading = *baseline;
  ledger.marks.push_back(start_mark);
  run->write("begin run", [&](RunObserver& o) { return o.run_started(ledger); });
  observers.notify([&](RunObserver& o) {
    o.target_reading(target_ref(ledger), *baseline, ledger.peak_bytes, false, probe.read_timing());
    o.target_state(target_ref(ledger), true, run->exact_peaks_ ? "" : "hwm_reset_denied");
  });
  return run;
}

std::unique_ptr<RunMachine> RunMachine::resume(RunLedger ledger, const RunParams& params,
                                               ObserverSet& observers) {
  LedgerRecords records(ledger);
  auto run = resume(head_of(ledger), records, params, observers);
  return run ? std::move(*run) : nullptr;  // records in memory cannot fail to read
}

Result<std::unique_ptr<RunMachine>> RunMachine::resume(RunLedger head, RunRecords& records,
                                                       const RunParams& params,
                                                       ObserverSet& observers) {
  std::unique_ptr<RunMachine> run(new RunMachine(params, observers));
  run->ledger_ = std::move(head);
  if (auto read = run->read_records(records); !read) return read.error();
  run->resume_from_records();
  return run;
}

// Each record as it comes is folded in as a running run folds it, and the oldest go past the
// held counts the same way (trim_*), so a run's whole history is never in memory at once.
Status RunMachine::read_records(RunRecords& records) {
  RunLedger& l = ledger_;
  auto phases = records.phases([&](PhaseRecord phase) { phases_.resumed(std::move(phase)); });
  if (!phases) return phases;
  // Boundaries that were still settling when the daemon died: settle on what we have. What the
  // settled ones say was judged (and said) before the restart: judge_growth says only what the
  // others change, not a plateau or warning again.
  auto boundaries = records.boundaries([&](BoundaryRecord b) {
    rounds_ended_ = std::max(rounds_ended_, b.round);
    window_.resumed(std::move(b), detectors());
  });
  if (!boundaries) return boundaries;
  auto verdicts = records.verdicts([&](Verdict v) {
    if (v.kind == verdict_kind::kGrowthClass) {
      window_.classified_before(v.round);
    }
    verdicts_.resumed(std::move(v));  // the coordinator heard of these before
  });
  if (!verdicts) return verdicts;
  // Marks: only the newest the run holds are read; the rest is a count.
  auto total = records.mark_count();
  if (!total) return total.error();
  const std::size_t held = held_marks();
  const std::uint64_t kept = *total > held + held / 4 ? held : *total;
  l.earlier_marks = *total - kept;
  l.marks.reserve(kept);
  return records.newest_marks(kept, [&](MarkRecord m) { l.marks.push_back(std::move(m)); });
}

void RunMachine::resume_from_records() {
  RunLedger& l = ledger_;
  // Past the held counts, a run read whole kept exactly them: so does the stream.
  if (l.earlier_boundaries.count > 0) window_.trim(/*exact=*/true);
  if (l.earlier_phases > 0) phases_.trim(/*exact=*/true);
  if (l.earlier_verdicts > 0) verdicts_.trim(/*exact=*/true);
  phases_.reopen();
  last_mark_at_ = l.marks.empty() ? l.started : l.marks.back().reading.at;
  exact_peaks_ = l.peak_exact;
  // Gaps judged before the restart are not judged again (over the held marks, as trim_history
  // forgets those reported before them).
  for (const PhaseGap& gap : measure_phase_gaps(l.marks, detectors()).gaps) {
    if (gap.over) phases_.gap_first(gap.rule_index, gap.from_at);
  }
  judge_growth();
  trim_history();
}

EndOutcome RunMachine::end(const std::optional<MemoryReading>& reading, Instant now,
                           const std::string& failure, std::optional<EndFacts> facts) {
  EndOutcome out;
  // The last round's floor comes from before the end: what the coordinator frees after it is
  // teardown. Its growth verdict goes out in this reply.
  settle_before_teardown(reading ? reading->at : now, /*readings_until_cut=*/true);
  if (!failure.empty()) emit(failed_verdict(ledger_, failure, now));
  append_end_mark(reading.value_or(ledger_.last));
  if (facts) {  // the end mark keeps (and the store persists) the allocator and gc facts
    ledger_.marks.back().allocator = facts->allocator;
    ledger_.marks.back().gc = facts->gc;
  }
  release_.set_end_facts(std::move(facts));
  finish(RunState::kEnded, now);
  if (reading) {
    samples_.add(*reading);
    check_release(now);
  }
  out.reading = ledger_.marks.back().reading;
  out.peak_bytes = ledger_.peak_bytes;
  out.stored = store_ok_ && observers_.has_durable();
  out.verdicts = verdicts_.take_unreplied();
  return out;
}

void RunMachine::append_end_mark(const MemoryReading& reading) {
  MarkRecord mark;
  mark.seq = ledger_.mark_count() + 1;
  mark.kind = MarkKind::kRunEnd;
  mark.round = rounds_ended_;
  mark.reading = reading;
  ledger_.marks.push_back(mark);
  trim_history();
}

void RunMachine::fold_exit_peak(std::uint64_t max_rss_bytes) {
  MemoryReading at_exit = ledger_.last;
  at_exit.hwm_bytes = max_rss_bytes;
  const std::uint64_t peak = at_exit.counted_peak_bytes();
  if (peak <= ledger_.peak_bytes) return;
  ledger_.peak_bytes = peak;
  ledger_.peak_exact = true;  // the kernel's own high-water mark, as at a mark
  log::info("run.exit_peak",
            {{"run", run_id()}, {"max_rss_bytes", max_rss_bytes}, {"peak_bytes", peak}});
  write("peak", [&](RunObserver& o) { return o.peak_revised(ledger_); });
}

// The last reading's VmHWM, counted like a mark's, raises the run's peak and the open phases'
// (the high-water mark was reset at the innermost one's begin, so it is within all of them).
void RunMachine::fold_death_hwm() {
  const std::uint64_t hwm_bytes = release_.death_hwm_bytes();
  if (hwm_bytes == 0) return;
  MemoryReading at_death = ledger_.last;
  at_death.hwm_bytes = hwm_bytes;
  const std::uint64_t peak = at_death.counted_peak_bytes();
  phases_.fold_peak(peak);
  if (peak <= ledger_.peak_bytes) return;
  ledger_.peak_bytes = peak;
  log::info("run.death_peak", {{"run", run_id()}, {"hwm_bytes", hwm_bytes}, {"peak_bytes", peak}});
  write("peak", [&](RunObserver& o) { return o.peak_revised(ledger_); });
}

void RunMachine::process_exited(const ExitInfo& info, Instant now) {
  release_.process_exited(now);
  // A process that exits inside the window was tearing down: the readings after the round-end
  // mark may show its teardown, so the mark's own reading is the floor.
  settle_before_teardown(now, /*readings_until_cut=*/false);
  const bool clean = info.status_known && info.signal == 0 && info.exit_code == 0;
  if (active() && end_on_exit_ && clean) {
    // A clean exit is the normal end of a run that ends with its process (ramguard exec).
    append_end_mark(ledger_.last);
    finish(RunState::kEnded, now);
    log::info("run.ended_with_process", {{"run", run_id()}, {"detail", info.detail}});
    check_release(now);
  } else if (active()) {
    // The cgroup's own peak is the run's: at an OOM kill the limit it reached.
    const auto& death_peak = release_.death_peak();
    if (death_peak && death_peak->peak_usage_bytes > ledger_.peak_bytes) {
      ledger_.peak_bytes = death_peak->peak_usage_bytes;
    }
    fold_death_hwm();
    finish(RunState::kExited, now);
    emit(exited_verdict(
        ledger_,
        info.status_known && info.signal == 0 ? std::optional<int>(info.exit_code) : std::nullopt,
        info.signal != 0 ? std::optional<int>(info.signal) : std::nullopt, info.oom_killed, now,
        death_peak));
    log::warning("run.exited", {{"run", run_id()}, {"detail", info.detail}});
  } else {
    check_release(now);
  }
  // Nothing more to read: whatever is undecided is decided now.
  release_.decide();
  observers_.notify([&](RunObserver& o) { o.target_state(target_ref(ledger_), false, "exited"); });
}

void RunMachine::lost(Instant now) {
  settle_before_teardown(now, /*readings_until_cut=*/false);
  finish(RunState::kLost, now);
  emit(lost_verdict(ledger_, now));
  release_.decide();
}

// Common to end, exit and loss: close the books on a run.
void RunMachine::finish(RunState state, Instant at) {
  ledger_.state = state;
  ledger_.ended = at;
  std::vector<const PhaseRecord*> closed;
  if (state == RunState::kEnded) {
    closed = phases_.close_all(at);
  }
  check_budget();
  if (auto estimate = assess_estimate(ledger_.peak_bytes, ledger_.peak_exact,
                                      ledger_.info.estimate_bytes, at, detectors())) {
    emit(estimate->verdict);
  }
  write("end run", [&](RunObserver& o) { return o.run_finished(ledger_, closed); });
  log::info("run.end", {{"run", run_id()},
                        {"job", ledger_.info.job},
                        {"state", run_state_name(state)},
                        {"peak_bytes", ledger_.peak_bytes},
                        {"peak_exact", ledger_.peak_exact}});
}

std::optional<Instant> RunMachine::next_deadline() const {
  std::optional<Instant> next;
  auto consider = [&](Instant at) {
    if (!next || at.monotonic < next->monotonic) next = at;
  };
  if (auto at = window_.due()) consider(*at);
  if (auto at = release_.next_deadline(detectors())) consider(*at);
  return next;
}

void RunMachine::advance(Instant now, TargetProbe* probe) {
  if (window_.due_by(now)) settle_boundary(*window_.settling(), now, probe);
  if (!release_.decided() && ledger_.ended) {
    // Memory freed right after the end is seen right after it, not at the next periodic tick.
    const bool due = release_.take_due_reads(now);
    if (due && probe != nullptr && ledger_.state == RunState::kEnded) {
      if (auto r = probe->read(/*complete=*/true)) {
        r->source = ReadingSource::kPeriodic;
        r->hwm_bytes = 0;
        samples_.add(*r);
        observe(*r, probe->read_timing());
      }
    }
    check_release(now);
  }
}

bool RunMachine::wants_sampling() const {
  if (active()) return true;
  return ledger_.state == RunState::kEnded && !release_.decided();
}

void RunMachine::sampling_stopped(Instant now) {
  // A round that ended just before the run: its floor is taken now, not lost with the window.
  settle_before_teardown(now, /*readings_until_cut=*/true);
  flush_progress();
  observers_.notify([&](RunObserver& o) { o.target_retired(target_ref(ledger_), now); });
}

std::size_t RunMachine::held_marks() const {
  return std::max<std::size_t>(params_.held_marks, 256);
}

// Drops the oldest marks and settled boundaries past the held counts, a quarter at a time so
// a mark moves few records on average; the store has them all. At most 1.25x the held counts
// + 1 are ever allocated.
void RunMachine::trim_history() {
  const std::size_t held_marks = this->held_marks();
  auto& marks = ledger_.marks;
  if (marks.size() > held_marks + held_marks / 4) {
    const std::size_t drop = marks.size() - held_marks;
    marks.erase(marks.begin(), marks.begin() + static_cast<long>(drop));
    ledger_.earlier_marks += drop;
  }
  keep_room(marks, held_marks + held_marks / 4 + 1);
  window_.trim();
  // Phase gaps are judged over the held marks only: what was reported before them is done.
  if (!marks.empty()) phases_.forget_gaps_before(marks.front().reading.at);
  phases_.trim();
  verdicts_.trim();
}

void RunMachine::emit(Verdict verdict, std::vector<Verdict>* out) {
  verdicts_.emit(
      std::move(verdict),
      [&](const Verdict& v) {
        write("verdict", [&](RunObserver& o) { return o.verdict(ledger_, v); });
      },
      out);
}

void RunMachine::flush_progress() {
  if (!pending_max_rss_) return;
  ProgressSample sample;
  sample.at_unix_ms = unix_ms(ledger_.last.at);
  sample.rss_bytes = ledger_.last.rss_bytes;
  sample.min_rss_bytes = *pending_min_rss_;
  sample.max_rss_bytes = *pending_max_rss_;
  sample.anon_bytes = ledger_.last.anon_bytes;
  sample.file_bytes = ledger_.last.file_bytes;
  pending_min_rss_.reset();
  pending_max_rss_.reset();
  write("progress", [&](RunObserver& o) { return o.progress(ledger_, sample); });
}

// Observers are optional: a failed durable write is logged, and the run goes on in memory.
bool RunMachine::write(std::string_view what, const std::function<Status(RunObserver&)>& fn) {
  const bool stored = observers_.write(what, run_id(), fn);
  if (!stored) store_ok_ = false;
  return stored;
}

const DetectorParams& RunMachine::detectors() const {
  const DetectorParams& configured = params_.detectors;
  const bool copies = uses_model_copies(configured) && ledger_.info.model_bytes != 0;
  const bool capped = cgroup_limit_bytes_ && *cgroup_limit_bytes_ < configured.budget_bytes;
  if (!copies && !capped) return configured;
  // Resolved on every use, not cached at start: a reload changes params_ under live runs.
  resolved_detectors_ =
      copies ? resolve_model_copies(configured, ledger_.info.model_bytes) : configured;
  if (capped) {
    resolved_detectors_.budget_bytes = *cgroup_limit_bytes_;
    resolved_detectors_.budget_name = "budget (the run's cgroup limit)";
  }
  return resolved_detectors_;
}

}  // namespace ramguard
