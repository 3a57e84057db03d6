// Marks: phase begin/end and round end, each with a complete reading and a high-water reset,
// and the settled floor taken after each round end.
#include <algorithm>
#include <limits>
#include <span>

#include "common/log.hpp"
#include "ramguard/base/protocol.hpp"
#include "runs/mark_time.hpp"
#include "runs/run_machine.hpp"
#include "verdicts/phase_gap.hpp"

namespace ramguard {
namespace {

// Only the recent marks are measured at each mark: a gap spans a few marks, and re-measuring
// the whole run would make every mark cost O(marks). Reports measure the whole run.
constexpr std::size_t kGapWindowMarks = 256;

}  // namespace

// The high-water mark in a complete reading is the peak since the previous reset: it belongs
// to every phase open since then, and to the run. Peaks are of the memory that counts: the
// mark less the page cache and kernel memory read with it (counted_peak_bytes).
void RunMachine::fold_hwm(const MemoryReading& complete) {
  const std::uint64_t peak = complete.counted_peak_bytes();
  phases_.fold_peak(peak);
  if (peak > ledger_.peak_bytes) ledger_.peak_bytes = peak;
}

Result<MemoryReading> RunMachine::take_reading(TargetProbe& probe, bool reset) {
  auto reading = probe.read(/*complete=*/true);
  if (!reading) return reading;
  fold_hwm(*reading);
  observe(*reading, probe.read_timing());
  if (reset && exact_peaks_) {
    if (auto s = probe.reset_hwm(); !s) {
      exact_peaks_ = false;
      ledger_.peak_exact = false;
      log::warning("run.exact_peaks_lost", {{"run", run_id()}, {"reason", s.error().message}});
    }
  }
  return reading;
}

Status RunMachine::validate_mark(const MarkInput& input) const {
  if (ledger_.mark_count() >= params_.max_marks_per_run) {
    return Error{"run " + run_id() + " has reached the limit of " +
                     std::to_string(params_.max_marks_per_run) + " marks",
                 ErrorKind::kResourceExhausted};
  }
  switch (input.kind) {
    case MarkKind::kPhaseBegin:
    case MarkKind::kPhaseEnd:
      if (!protocol::is_phase_name(input.phase)) {
        return Error{"phase name '" + input.phase.substr(0, 80) +
                     "' is invalid: use 1-64 characters of a-z 0-9 _ . -"};
      }
      return input.kind == MarkKind::kPhaseBegin ? phases_.can_begin(input.phase)
                                                 : phases_.can_end(input.phase);
    case MarkKind::kRoundEnd:
      // Rounds strictly increase; a counted round (0) must not wrap past the largest number.
      if (input.round != 0 && input.round <= rounds_ended_) {
        return Error{"round " + std::to_string(input.round) + " already ended in run " + run_id() +
                         " (last ended round: " + std::to_string(rounds_ended_) +
                         "): rounds must strictly increase",
                     ErrorKind::kFailedPrecondition};
      }
      if (input.round == 0 && rounds_ended_ == std::numeric_limits<std::uint32_t>::max()) {
        return Error{"round " + std::to_string(rounds_ended_) +
                         " is the last round number: no further round can end in run " + run_id(),
                     ErrorKind::kFailedPrecondition};
      }
      return ok_status();
    default:
      return Error{"mark kind must be phase begin, phase end or round end"};
  }
}

Result<MarkOutcome> RunMachine::mark(const MarkInput& input, TargetProbe& probe) {
  if (auto valid = validate_mark(input); !valid) return valid.error();
  auto reading = take_reading(probe, /*reset=*/true);
  if (!reading) return Error{reading.error().message, ErrorKind::kUnavailable};
  reading->at = mark_instant(reading->at, input.client_wall, last_mark_at_);
  const Instant now = reading->at;
  MarkOutcome out;
  MarkRecord& mark = out.mark;
  mark.seq = ledger_.mark_count() + 1;
  mark.kind = input.kind;
  mark.phase = input.kind == MarkKind::kRoundEnd ? "" : input.phase;
  if (input.kind == MarkKind::kRoundEnd) {
    mark.round = input.round != 0 ? input.round : rounds_ended_ + 1;
  } else {
    mark.round = current_round();
  }
  mark.reading = *reading;
  mark.allocator = input.allocator;
  mark.gc = input.gc;
  ledger_.marks.push_back(mark);
  last_mark_at_ = now;
  runaway_flagged_ = false;

  const PhaseRecord* phase_changed = nullptr;
  const BoundaryRecord* boundary_changed = nullptr;
  if (input.kind == MarkKind::kPhaseBegin) {
    PhaseRecord phase;
    phase.phase = input.phase;
    phase.round = mark.round;
    phase.begin = now;
    phase.peak_bytes = reading->counted_bytes();
    phase.peak_exact = exact_peaks_;
    if (auto planned = phases_.yardstick(input.phase)) {
      phase.plan_bytes = planned->plan_live_bytes;
    }
    phase_changed = &phases_.begin(std::move(phase));
    out.warning = phases_.plan_warning(input.phase);
    // Warn before the memory is allocated, when the plan says it will pass the budget, its
    // headroom or the room the node and the cgroup have.
    for (Verdict& v : phases_.forecasts(input.phase, mark.round, input.room,
                                        reading->counted_bytes(), now, detectors())) {
      emit(std::move(v));
    }
  } else if (input.kind == MarkKind::kPhaseEnd) {
    PhaseRecord& phase = phases_.end(input.phase, now);
    if (input.allocator) phase.allocated_bytes = input.allocator->allocated_bytes;
    out.phase_peak_bytes = phase.peak_bytes;
    out.phase_duration_seconds = seconds_between(phase.begin, now);
    out.peak_exact = phase.peak_exact && exact_peaks_;
    phase.peak_exact = out.peak_exact;
    phase_changed = &phase;
  } else {
    // A round that ends before the previous one settled: that floor is taken now.
    settle_pending(now, nullptr);
    rounds_ended_ = mark.round;
    BoundaryRecord boundary;
    boundary.round = mark.round;
    boundary.reading = *reading;
    boundary.floor_bytes = reading->rss_bytes;
    boundary.allocator = input.allocator;
    boundary.gc = input.gc;
    boundary.processes = probe.tree_shares();  // tree scope: who holds what, for attribution
    boundary_changed = &window_.open(std::move(boundary));
  }
  evaluate_gaps(out.verdicts);
  out.stored = write("mark", [&](RunObserver& o) {
    return o.marked(ledger_, mark, phase_changed, boundary_changed);
  });
  out.verdicts = verdicts_.take_unreplied();
  trim_history();
  log::debug("run.mark", {{"run", run_id()},
                          {"seq", mark.seq},
                          {"phase", mark.phase},
                          {"round", mark.round},
                          {"rss_bytes", reading->rss_bytes},
                          {"hwm_bytes", reading->hwm_bytes}});
  return out;
}

void RunMachine::evaluate_gaps(std::vector<Verdict>& out) {
  const auto& marks = ledger_.marks;
  const std::size_t first = marks.size() > kGapWindowMarks ? marks.size() - kGapWindowMarks : 0;
  const std::span<const MarkRecord> window(marks.data() + first, marks.size() - first);
  const PhaseGapAssessment gaps = measure_phase_gaps(window, detectors());
  if (!gaps.gaps.empty()) {
    const PhaseGap& last = gaps.gaps.back();
    if (last.to_at.monotonic == last_mark_at_.monotonic) {
      observers_.notify([&](RunObserver& o) { o.phase_gap(ledger_, last.rule, last.seconds); });
    }
  }
  std::size_t verdict_index = 0;
  for (const PhaseGap& gap : gaps.gaps) {
    if (!gap.over) continue;
    if (verdict_index < gaps.verdicts.size() && phases_.gap_first(gap.rule_index, gap.from_at)) {
      emit(gaps.verdicts[verdict_index], &out);
    }
    ++verdict_index;
  }
}

void RunMachine::settle_pending(Instant now, TargetProbe* probe) {
  if (auto index = window_.settling()) settle_boundary(*index, now, probe);
}

void RunMachine::settle_before_teardown(Instant cut, bool readings_until_cut) {
  if (auto at = window_.before_teardown(cut, readings_until_cut, active())) {
    settle_boundary(at->index, at->at, nullptr, at->full_window);
  }
}

void RunMachine::settle_boundary(std::size_t index, Instant now, TargetProbe* probe,
                                 bool full_window) {
  if (!window_.close(index)) return;
  if (probe != nullptr) {  // a fresh reading ends the window
    if (auto reading = probe->read(/*complete=*/false)) {
      samples_.add(*reading);
      observe(*reading, probe->read_timing());
      now = reading->at;
    }
  }
  const BoundaryRecord& boundary = window_.settle(index, now, samples_, full_window, detectors());
  write("boundary", [&](RunObserver& o) { return o.boundary_settled(ledger_, boundary); });
  log::debug("run.boundary_settled", {{"run", run_id()},
                                      {"round", boundary.round},
                                      {"rss_bytes", boundary.reading.rss_bytes},
                                      {"floor_bytes", boundary.floor_bytes},
                                      {"window_complete", full_window}});
  judge_growth();
}

void RunMachine::judge_growth() {
  for (Verdict& v : window_.judge_growth(detectors())) emit(with_census(std::move(v)));
}

void RunMachine::set_boundary_pss(std::uint32_t round, std::uint64_t pss_bytes) {
  for (auto it = ledger_.boundaries.rbegin(); it != ledger_.boundaries.rend(); ++it) {
    if (it->round == round) {
      it->reading.pss_bytes = pss_bytes;
      return;
    }
  }
}

}  // namespace ramguard
