#pragma once
// Whether a run's memory was released after its end: the quick readings after the end, the
// grace the release has, what the coordinator said at its end, and what is known of the
// process's death (its exit, the cgroup's peak, the last VmHWM) for the death verdict.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "model/ledger.hpp"
#include "runs/sample_series.hpp"
#include "sampling/exit_info.hpp"
#include "verdicts/exit.hpp"
#include "verdicts/params.hpp"

namespace ramguard {

class ReleaseCheck {
 public:
  // ledger: the run's (it outlives the check); its end starts the release.
  explicit ReleaseCheck(const RunLedger& ledger) : ledger_(ledger) {}

  bool decided() const { return decided_; }
  // Nothing more will be read (the process is gone, the run lost): undecided stays so.
  void decide() { decided_ = true; }
  // The run ended and its release is not decided yet.
  bool pending() const { return !decided_ && ledger_.ended && ledger_.state == RunState::kEnded; }

  // The coordinator's allocator statistics and probes at its end (kept in memory only: a
  // restart loses the trim probe).
  void set_end_facts(std::optional<EndFacts> facts) { end_facts_ = std::move(facts); }
  void process_exited(Instant at) { exited_at_ = at; }
  void set_death_peak(const CgroupDeathPeak& peak) { death_peak_ = peak; }
  const std::optional<CgroupDeathPeak>& death_peak() const { return death_peak_; }
  void set_death_hwm(std::uint64_t hwm_bytes) { death_hwm_bytes_ = hwm_bytes; }
  std::uint64_t death_hwm_bytes() const { return death_hwm_bytes_; }

  // The next of the quick readings after the run's end, if any is left.
  std::optional<Instant> next_read() const;
  // Counts the quick readings due at or before `now` as taken; true when any was.
  bool take_due_reads(Instant now);
  // While pending: the earlier of the grace's end and the next quick reading.
  std::optional<Instant> next_deadline(const DetectorParams& detectors) const;
  // Judges the release on the readings since the end (settle: the boundary settle window, an
  // exit sooner after the end leaves it unverified). A verdict once it is decided.
  std::optional<Verdict> check(Instant now, const SampleSeries& samples,
                               std::chrono::nanoseconds settle, const DetectorParams& detectors);

 private:
  const RunLedger& ledger_;
  bool decided_ = false;
  std::size_t reads_ = 0;  // quick readings after the end taken so far
  std::optional<EndFacts> end_facts_;
  std::optional<Instant> exited_at_;
  std::optional<CgroupDeathPeak> death_peak_;
  std::uint64_t death_hwm_bytes_ = 0;
};

}  // namespace ramguard
