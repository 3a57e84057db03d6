// Marks: phase begin/end and round end, each with a complete reading and a high-water reset,
// and the settled floor taken after each round end.
#include <algorithm>

#include "common/log.hpp"
#include "metrics/exporter.hpp"
#include "runs/run_registry.hpp"
#include "store/store.hpp"
#include "verdicts/classify.hpp"
#include "verdicts/growth.hpp"
#include "verdicts/phase_gap.hpp"

namespace ramguard {
namespace {

bool valid_phase_name(const std::string& phase) {
  if (phase.empty() || phase.size() > 64) return false;
  return std::all_of(phase.begin(), phase.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
  });
}

std::string open_phase_names(const Run& run) {
  std::string names;
  for (std::size_t i : run.open_phases) {
    names += (names.empty() ? "" : ", ") + run.ledger.phases[i].phase;
  }
  return names.empty() ? "none" : names;
}

}  // namespace

// The high-water mark in a complete reading is the peak since the previous reset: it belongs
// to every phase open since then, and to the run.
void RunRegistry::fold_hwm(Run& run, const MemoryReading& complete) {
  const std::uint64_t peak = std::max(complete.hwm_bytes, complete.rss_bytes);
  for (std::size_t i : run.open_phases) {
    auto& phase = run.ledger.phases[i];
    phase.peak_bytes = std::max(phase.peak_bytes, peak);
  }
  if (peak > run.ledger.peak_bytes) run.ledger.peak_bytes = peak;
}

Result<MemoryReading> RunRegistry::mark_reading(Run& run, bool reset) {
  auto reading = sampler_.read_now(run.key, /*complete=*/true);
  if (!reading) return reading;
  fold_hwm(run, *reading);
  observe(run, *reading);
  if (reset && run.exact_peaks) {
    if (auto s = sampler_.reset_hwm(run.key); !s) {
      run.exact_peaks = false;
      run.ledger.peak_exact = false;
      log::warning("run.exact_peaks_lost",
                   {{"run", run.ledger.info.run_id}, {"reason", s.error().message}});
    }
  }
  return reading;
}

Result<MarkOutcome> RunRegistry::mark(const MarkInput& input, const Caller& caller) {
  auto found = find_for_change(input.run_id, caller, "mark");
  if (!found) return found.error();
  Run& run = **found;
  RunLedger& ledger = run.ledger;
  if (ledger.marks.size() >= params_.max_marks_per_run) {
    return Error{"run " + input.run_id + " has reached the limit of " +
                     std::to_string(params_.max_marks_per_run) + " marks",
                 ErrorKind::kResourceExhausted};
  }
  auto open = std::find_if(run.open_phases.begin(), run.open_phases.end(),
                           [&](std::size_t i) { return ledger.phases[i].phase == input.phase; });
  switch (input.kind) {
    case MarkKind::kPhaseBegin:
    case MarkKind::kPhaseEnd:
      if (!valid_phase_name(input.phase)) {
        return Error{"phase name '" + input.phase.substr(0, 80) +
                     "' is invalid: use 1-64 characters of a-z 0-9 _ . -"};
      }
      if (input.kind == MarkKind::kPhaseBegin && open != run.open_phases.end()) {
        return Error{"phase '" + input.phase + "' is already open in run " + input.run_id,
                     ErrorKind::kFailedPrecondition};
      }
      if (input.kind == MarkKind::kPhaseEnd && open == run.open_phases.end()) {
        return Error{"phase '" + input.phase +
                         "' ended without a begin (open phases: " + open_phase_names(run) + ")",
                     ErrorKind::kFailedPrecondition};
      }
      break;
    case MarkKind::kRoundEnd:
      if (input.round != 0 && input.round <= run.rounds_ended) {
        return Error{"round " + std::to_string(input.round) + " already ended in run " +
                         input.run_id + " (last ended round: " + std::to_string(run.rounds_ended) +
                         ")",
                     ErrorKind::kFailedPrecondition};
      }
      break;
    default:
      return Error{"mark kind must be phase begin, phase end or round end"};
  }
  auto reading = mark_reading(run, /*reset=*/true);
  if (!reading) return Error{reading.error().message, ErrorKind::kUnavailable};
  const Instant now = reading->at;
  const std::size_t verdicts_before = ledger.verdicts.size();

  MarkOutcome out;
  MarkRecord& mark = out.mark;
  mark.seq = ledger.marks.size() + 1;
  mark.kind = input.kind;
  mark.phase = input.kind == MarkKind::kRoundEnd ? "" : input.phase;
  mark.round =
      input.kind == MarkKind::kRoundEnd && input.round != 0 ? input.round : run.current_round();
  mark.reading = *reading;
  mark.allocator = input.allocator;
  mark.gc = input.gc;
  ledger.marks.push_back(mark);
  run.last_mark_at = now;
  run.runaway_flagged = false;

  const PhaseRecord* phase_changed = nullptr;
  const BoundaryRecord* boundary_changed = nullptr;
  if (input.kind == MarkKind::kPhaseBegin) {
    PhaseRecord phase;
    phase.phase = input.phase;
    phase.round = mark.round;
    phase.begin = now;
    phase.peak_bytes = reading->rss_bytes;
    phase.peak_exact = run.exact_peaks;
    ledger.phases.push_back(phase);
    run.open_phases.push_back(ledger.phases.size() - 1);
    phase_changed = &ledger.phases.back();
  } else if (input.kind == MarkKind::kPhaseEnd) {
    PhaseRecord& phase = ledger.phases[*open];
    phase.end = now;
    run.open_phases.erase(open);
    out.phase_peak_bytes = phase.peak_bytes;
    out.phase_duration_seconds = seconds_between(phase.begin, now);
    out.peak_exact = phase.peak_exact && run.exact_peaks;
    phase.peak_exact = out.peak_exact;
    phase_changed = &phase;
    if (metrics_ != nullptr) {
      metrics_->observe_phase(ledger.info.job, phase.phase, phase.peak_bytes,
                              out.phase_duration_seconds);
    }
  } else {
    // A round that ends before the previous one settled: that floor is taken now.
    for (std::size_t i = 0; i < ledger.boundaries.size(); ++i) {
      if (!ledger.boundaries[i].settled) settle_boundary(ledger.info.run_id, i);
    }
    run.rounds_ended = mark.round;
    BoundaryRecord boundary;
    boundary.round = mark.round;
    boundary.reading = *reading;
    boundary.floor_bytes = reading->rss_bytes;
    boundary.allocator = input.allocator;
    boundary.gc = input.gc;
    ledger.boundaries.push_back(boundary);
    boundary_changed = &ledger.boundaries.back();
    const std::size_t index = ledger.boundaries.size() - 1;
    run.settle_timer = std::make_unique<asio::steady_timer>(io_, params_.settle);
    run.settle_timer->async_wait(
        [this, id = ledger.info.run_id, index, alive = alive_](const asio::error_code& ec) {
          if (!ec && *alive) settle_boundary(id, index);
        });
    if (metrics_ != nullptr) {
      metrics_->observe_boundary(ledger.info.job, mark.round, reading->rss_bytes,
                                 reading->rss_bytes);
    }
  }
  evaluate_gaps(run, out.verdicts);
  out.stored = store_write(run, "mark", [&]() -> Status {
    return store_->atomically([&]() -> Status {
      if (auto s = store_->append_mark(ledger.info.run_id, mark); !s) return s;
      if (phase_changed != nullptr) {
        if (auto s = store_->save_phase(ledger.info.run_id, *phase_changed); !s) return s;
      }
      if (boundary_changed != nullptr) {
        if (auto s = store_->save_boundary(ledger.info.run_id, *boundary_changed); !s) return s;
      }
      return store_->update_progress(ledger.info.run_id, ledger.peak_bytes, ledger.peak_exact,
                                     ledger.last);
    });
  });
  out.verdicts.assign(ledger.verdicts.begin() + static_cast<long>(verdicts_before),
                      ledger.verdicts.end());
  log::debug("run.mark", {{"run", ledger.info.run_id},
                          {"seq", mark.seq},
                          {"phase", mark.phase},
                          {"round", mark.round},
                          {"rss_bytes", reading->rss_bytes},
                          {"hwm_bytes", reading->hwm_bytes}});
  return out;
}

// Only the recent marks are measured at each mark: a gap spans a few marks, and re-measuring
// the whole run would make every mark cost O(marks). Reports measure the whole run.
constexpr std::size_t kGapWindowMarks = 256;

void RunRegistry::evaluate_gaps(Run& run, std::vector<Verdict>& out) {
  const auto& marks = run.ledger.marks;
  const std::size_t first = marks.size() > kGapWindowMarks ? marks.size() - kGapWindowMarks : 0;
  const std::span<const MarkRecord> window(marks.data() + first, marks.size() - first);
  const PhaseGapAssessment gaps = measure_phase_gaps(window, params_.detectors);
  if (metrics_ != nullptr && !gaps.gaps.empty()) {
    const PhaseGap& last = gaps.gaps.back();
    if (last.to_at.monotonic == run.last_mark_at.monotonic) {
      metrics_->observe_gap(run.ledger.info.job, last.rule, last.seconds);
    }
  }
  std::size_t verdict_index = 0;
  for (const PhaseGap& gap : gaps.gaps) {
    if (!gap.over) continue;
    const auto key =
        std::make_pair(gap.rule_index, static_cast<std::uint64_t>(gap.from_at.monotonic.count()));
    if (verdict_index < gaps.verdicts.size() && run.gaps_reported.insert(key).second) {
      emit(run, gaps.verdicts[verdict_index], &out);
    }
    ++verdict_index;
  }
}

// The floor of a round boundary is the lowest RSS between the round-end mark and the end of
// the settle window: memory freed just after the mark (a deferred cleanup) is not growth.
void RunRegistry::settle_boundary(const std::string& run_id, std::size_t index) {
  Run* run = find_mut(run_id);
  if (run == nullptr || index >= run->ledger.boundaries.size()) return;
  BoundaryRecord& boundary = run->ledger.boundaries[index];
  if (boundary.settled) return;
  const Instant now = clock_.now();
  if (run->key != 0) {
    if (auto reading = sampler_.read_now(run->key, false)) {
      run->samples.add(*reading);
      observe(*run, *reading);
    }
  }
  auto low = run->samples.min_rss_between(boundary.reading.at, now);
  boundary.floor_bytes =
      std::min(boundary.reading.rss_bytes, low.value_or(boundary.reading.rss_bytes));
  boundary.settled = true;
  store_write(*run, "boundary", [&] { return store_->save_boundary(run_id, boundary); });
  log::debug("run.boundary_settled", {{"run", run_id},
                                      {"round", boundary.round},
                                      {"rss_bytes", boundary.reading.rss_bytes},
                                      {"floor_bytes", boundary.floor_bytes}});
  if (metrics_ != nullptr) {
    metrics_->observe_boundary(run->ledger.info.job, boundary.round, boundary.reading.rss_bytes,
                               boundary.floor_bytes);
  }
  evaluate_growth(*run);
}

void RunRegistry::evaluate_growth(Run& run) {
  const auto floors = settled_floors(run.ledger);
  GrowthAssessment current =
      assess_growth(floors, growth_context(run.ledger.info), params_.detectors);
  for (Verdict& v : new_growth_verdicts(run.growth, current)) emit(run, std::move(v));
  const std::uint32_t round = floors.empty() ? 0 : floors.back().round;
  const bool classified = std::any_of(
      run.ledger.verdicts.begin(), run.ledger.verdicts.end(),
      [&](const Verdict& v) { return v.kind == verdict_kind::kGrowthClass && v.round == round; });
  if (!classified) {
    std::vector<BoundaryRecord> settled;
    for (const auto& b : run.ledger.boundaries) {
      if (b.settled) settled.push_back(b);
    }
    if (auto c = classify_growth(settled, run.ledger.info.model_bytes, params_.detectors)) {
      emit(run, c->verdict);
    }
  }
  run.growth = std::move(current);
}

}  // namespace ramguard
