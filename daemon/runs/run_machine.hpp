#pragma once
// One run's decisions, free of I/O and timers: marks, phases, boundaries and their settled
// floors, exact peaks, budget/runaway/release checks and verdicts. Readings come in through a
// TargetProbe, time through the readings and explicit `now` arguments, and deadlines (a
// boundary's settle window, the release grace) come out of next_deadline(), so a fake clock
// drives a whole run in a unit test. What happens is published to an ObserverSet.
//
// The machine keeps the run's ledger, its readings and marks; the rest of a run's state lives
// with the collaborator that decides on it: SettleWindow (the open boundary's window and the
// growth judged on floors), PhaseBook (open phases and what was said of them once),
// ReleaseCheck (the release after the end, the death facts) and VerdictLog (replies).
//
// Exact peaks: at every mark the machine takes a complete reading, folds its VmHWM (the peak
// since the previous reset) into every open phase and the run, then resets the high-water
// mark. So each phase's peak is exact even with nested phases, and periodic statm readings
// stay the cheap path.

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/ledger.hpp"
#include "ramguard/base/result.hpp"
#include "runs/observer_set.hpp"
#include "runs/phase_book.hpp"
#include "runs/release_check.hpp"
#include "runs/run_params.hpp"
#include "runs/run_source.hpp"
#include "runs/sample_series.hpp"
#include "runs/settle_window.hpp"
#include "runs/target_probe.hpp"
#include "runs/verdict_log.hpp"
#include "sampling/exit_info.hpp"
#include "verdicts/budget.hpp"
#include "verdicts/exit.hpp"
#include "verdicts/phase_room.hpp"

namespace ramguard {

struct MarkInput {
  std::string run_id;
  MarkKind kind = MarkKind::kPhaseBegin;
  std::string phase;
  std::uint32_t round = 0;  // 0: counted by the run
  std::optional<AllocatorFacts> allocator;
  std::optional<GcFacts> gc;
  // The client's wall-clock time of the mark, and when it stops waiting for the reply (both
  // since the Unix epoch; nullopt: not sent, as by clients before protocol field 7 and 8).
  std::optional<std::chrono::nanoseconds> client_wall;
  std::optional<std::chrono::nanoseconds> deadline_wall;
  // Phase begin: what the node and the run's cgroup can give now (measured by the caller);
  // nullopt: not measured, only the budget is forecast.
  std::optional<PhaseRoom> room;
};

struct MarkOutcome {
  MarkRecord mark;
  std::uint64_t phase_peak_bytes = 0;
  double phase_duration_seconds = 0;
  bool peak_exact = false;
  bool stored = false;
  std::vector<Verdict> verdicts;
  std::string warning;  // a hint beside an accepted mark (a phase its plan does not list)
};

struct EndOutcome {
  MemoryReading reading;
  std::uint64_t peak_bytes = 0;
  bool stored = false;
  std::vector<Verdict> verdicts;
};

class RunMachine {
 public:
  // Begins a run on `info.target`: a complete baseline reading, a high-water reset (exact
  // peaks when permitted) and the run-start mark.
  static Result<std::unique_ptr<RunMachine>> start(RunInfo info, bool end_on_exit,
                                                   TargetProbe& probe, const RunParams& params,
                                                   ObserverSet& observers);
  // A run read back from the ledger after a restart; its boundaries count as settled.
  static std::unique_ptr<RunMachine> resume(RunLedger ledger, const RunParams& params,
                                            ObserverSet& observers);
  // The same from the runs row (`head`) and its records as a stream: holds what a running run
  // holds, whatever the run's length. An error is a record that could not be read.
  static Result<std::unique_ptr<RunMachine>> resume(RunLedger head, RunRecords& records,
                                                    const RunParams& params,
                                                    ObserverSet& observers);

  RunMachine(const RunMachine&) = delete;
  RunMachine& operator=(const RunMachine&) = delete;

  // Validates and records a phase begin/end or round end with a complete reading.
  Result<MarkOutcome> mark(const MarkInput& input, TargetProbe& probe);
  // A complete reading folded into the run (reset: also reset the high-water mark).
  Result<MemoryReading> take_reading(TargetProbe& probe, bool reset);
  // The run's end, with the end reading when it could be taken.
  // failure: set when the coordinator ends the run because it failed (a "failed" verdict).
  // facts: the coordinator's allocator statistics and probes at its end (for the release).
  EndOutcome end(const std::optional<MemoryReading>& reading, Instant now,
                 const std::string& failure = {}, std::optional<EndFacts> facts = std::nullopt);
  // ramguard exec's ru_maxrss for the process (its RSS high-water mark over its whole life),
  // folded into the run's peak like a VmHWM at a mark; persisted when it raises the peak.
  void fold_exit_peak(std::uint64_t max_rss_bytes);
  // The process is gone: `ended` when the run ends with it and it exited cleanly, else `exited`.
  void process_exited(const ExitInfo& info, Instant now);
  // Cgroup scope: the cgroup's peak usage and limit read as its process died (before
  // process_exited), for the death verdict's exact peak.
  void cgroup_peak_at_death(const CgroupDeathPeak& peak) { release_.set_death_peak(peak); }
  // Process scope: VmHWM at the last reading before the process died (before process_exited):
  // the peak a death between marks (an OOM kill) would otherwise lose.
  void process_hwm_at_death(std::uint64_t hwm_bytes) { release_.set_death_hwm(hwm_bytes); }
  // Recovery found the process gone: the run ends `lost`.
  void lost(Instant now);

  // A periodic reading (probe: for the exact-peak refresh).
  void reading(const MemoryReading& reading, TargetProbe& probe);
  void unreadable(std::string_view reason);
  // The kernel's OOM killer killed `count` processes in the run's cgroup (cgroup scope).
  void oom_killed(std::uint64_t count, Instant at);
  // Handles every deadline at or before `now` (probe: a fresh reading for a settling floor).
  void advance(Instant now, TargetProbe* probe);
  std::optional<Instant> next_deadline() const;
  // Sampling goes on while the run is active or its release is undecided.
  bool wants_sampling() const;
  // Sampling stops: pending floors settle on what was seen, the trace is flushed.
  void sampling_stopped(Instant now);

  // `budget: auto`: the memory limit over the run's cgroup (the caller measured it at start or
  // resume). Below the budget, it is the budget this run's verdicts judge against.
  void set_cgroup_limit(std::uint64_t limit_bytes) { cgroup_limit_bytes_ = limit_bytes; }
  // The budget this run is judged against (the configured one, or its cgroup's smaller limit).
  std::uint64_t budget_bytes() const { return detectors().budget_bytes; }

  const RunLedger& ledger() const { return ledger_; }
  const std::string& run_id() const { return ledger_.info.run_id; }
  bool active() const { return ledger_.state == RunState::kActive; }
  bool end_on_exit() const { return end_on_exit_; }
  bool exact_peaks() const { return exact_peaks_; }
  bool store_ok() const { return store_ok_; }
  void store_lost() { store_ok_ = false; }  // a batch with its writes was rolled back
  // The tree's PSS at ROUND's boundary, measured after its mark (off the event loop).
  void set_boundary_pss(std::uint32_t round, std::uint64_t pss_bytes);
  // The client's census with a round end or the end (placed by the caller): kept in the
  // ledger (the newest kCensusHeld) and written by the observers (run_machine_census.cpp).
  void add_census(CensusRecord census);
  std::uint32_t rounds_ended() const { return rounds_ended_; }
  // The round phases and verdicts belong to: the next one, or, once the declared rounds have
  // all ended, the last (a save after the last round end is the run's end, not a round more).
  std::uint32_t current_round() const {
    const std::uint32_t declared = ledger_.info.declared_rounds;
    if (declared > 0 && rounds_ended_ >= declared) return rounds_ended_;
    return rounds_ended_ + 1;
  }
  const std::vector<std::size_t>& open_phases() const { return phases_.open(); }
  const SampleSeries& samples() const { return samples_; }
  bool release_decided() const { return release_.decided(); }

 private:
  RunMachine(const RunParams& params, ObserverSet& observers);

  void observe(const MemoryReading& reading, const ReadTiming& timing);
  void fold_hwm(const MemoryReading& complete);
  void refresh_peak(TargetProbe& probe);
  Status validate_mark(const MarkInput& input) const;
  // full_window: the settle window of a live run ran its whole length (only such a floor may
  // clear a growth warning).
  void settle_boundary(std::size_t index, Instant now, TargetProbe* probe, bool full_window = true);
  void settle_pending(Instant now, TargetProbe* probe);
  // The run's end, exit or loss at `cut` closes an open settle window: its floor is taken from
  // the readings before the cut (readings_until_cut) or the round-end mark's alone.
  void settle_before_teardown(Instant cut, bool readings_until_cut);
  void judge_growth();
  Status read_records(RunRecords& records);  // resume: the stream, folded as it comes
  void resume_from_records();                // resume: what follows from the records read
  std::size_t held_marks() const;
  void trim_history();
  void evaluate_gaps(std::vector<Verdict>& out);
  void check_budget();
  void check_runaway();
  // The detectors' thresholds for this run: those given in model copies resolved through the
  // run's model size (the configured bytes when it has none), and the budget capped by the
  // run's cgroup limit when one was set.
  const DetectorParams& detectors() const;
  void check_release(Instant now);
  void finish(RunState state, Instant at);
  void fold_death_hwm();
  void append_end_mark(const MemoryReading& reading);
  void emit(Verdict verdict, std::vector<Verdict>* out = nullptr);
  // A growth or release verdict with what the client's censuses say of it (the holder whose
  // bytes grew, what was held at the end); unchanged without censuses (run_machine_census.cpp).
  Verdict with_census(Verdict verdict) const;
  void flush_progress();
  bool write(std::string_view what, const std::function<Status(RunObserver&)>& fn);

  const RunParams& params_;
  std::optional<std::uint64_t> cgroup_limit_bytes_;
  mutable DetectorParams resolved_detectors_;  // detectors() when thresholds are in copies
  ObserverSet& observers_;
  RunLedger ledger_;
  SampleSeries samples_;
  bool end_on_exit_ = false;
  bool exact_peaks_ = false;
  std::uint32_t rounds_ended_ = 0;
  Instant last_mark_at_;
  BudgetState budget_state_ = BudgetState::kOk;
  bool runaway_flagged_ = false;  // once per mark interval
  std::uint32_t ticks_ = 0;
  std::optional<std::uint64_t> pending_min_rss_, pending_max_rss_;  // since the last flush
  bool store_ok_ = true;  // every durable write for this run so far succeeded
  SettleWindow window_;   // after ledger_, whose boundaries it settles
  PhaseBook phases_;      // after ledger_, whose phases it opens and closes
  ReleaseCheck release_;  // after ledger_, whose end it judges
  VerdictLog verdicts_;   // after ledger_, whose verdicts it appends to
};

}  // namespace ramguard
