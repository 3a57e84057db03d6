#pragma once
// Where restart recovery reads what was active: the ledger store implements it.
//
// A run's records come as a stream (RunRecords), not a whole RunLedger: recovery keeps what a
// running run holds (RunParams' held counts) and folds the rest into counts, totals and the
// growth tracker as it goes, so a restart's memory does not grow with marks per run
// (docs/measuring.md, "Bounded memory").

#include <cstdint>
#include <functional>
#include <vector>

#include "model/ledger.hpp"
#include "ramguard/base/result.hpp"
#include "runs/observer.hpp"

namespace ramguard {

// One active run's records, oldest first, each handed to `take` as it is read.
class RunRecords {
 public:
  virtual ~RunRecords() = default;
  virtual Result<std::uint64_t> mark_count() = 0;
  // The newest `count` marks only: recovery needs no older one (its count, from mark_count).
  virtual Status newest_marks(std::uint64_t count, const std::function<void(MarkRecord)>& take) = 0;
  virtual Status phases(const std::function<void(PhaseRecord)>& take) = 0;         // in begin order
  virtual Status boundaries(const std::function<void(BoundaryRecord)>& take) = 0;  // by round
  virtual Status verdicts(const std::function<void(Verdict)>& take) = 0;  // in order raised
};

// A whole ledger already in memory as RunRecords (tests, and sources without a stream).
class LedgerRecords final : public RunRecords {
 public:
  explicit LedgerRecords(const RunLedger& ledger) : ledger_(ledger) {}
  Result<std::uint64_t> mark_count() override { return ledger_.marks.size(); }
  Status newest_marks(std::uint64_t count, const std::function<void(MarkRecord)>& take) override {
    const std::size_t n = ledger_.marks.size();
    for (std::size_t i = count < n ? n - count : 0; i < n; ++i) take(ledger_.marks[i]);
    return ok_status();
  }
  Status phases(const std::function<void(PhaseRecord)>& take) override {
    for (const PhaseRecord& p : ledger_.phases) take(p);
    return ok_status();
  }
  Status boundaries(const std::function<void(BoundaryRecord)>& take) override {
    for (const BoundaryRecord& b : ledger_.boundaries) take(b);
    return ok_status();
  }
  Status verdicts(const std::function<void(Verdict)>& take) override {
    for (const Verdict& v : ledger_.verdicts) take(v);
    return ok_status();
  }

 private:
  const RunLedger& ledger_;
};

// The ledger without its records (what RunSource hands over beside them).
inline RunLedger head_of(const RunLedger& ledger) {
  RunLedger head;
  head.info = ledger.info;
  head.state = ledger.state;
  head.started = ledger.started;
  head.ended = ledger.ended;
  head.baseline = ledger.baseline;
  head.last = ledger.last;
  head.peak_bytes = ledger.peak_bytes;
  head.peak_exact = ledger.peak_exact;
  return head;
}

class RunSource {
 public:
  virtual ~RunSource() = default;
  virtual Result<std::vector<RunLedger>> load_active_runs() = 0;
  // Hands each active run to `resume`, oldest first, one at a time: its head (the runs row:
  // info, state, readings and peak; no records) and its records as a stream. An error `resume`
  // returns is a record that could not be read: the source skips that run and ends it lost.
  // Only a failure to read the runs at all is an error.
  virtual Status for_each_active_run(
      const std::function<Status(RunLedger head, RunRecords& records)>& resume) {
    auto runs = load_active_runs();
    if (!runs) return runs.error();
    for (RunLedger& ledger : *runs) {
      LedgerRecords records(ledger);
      (void)resume(head_of(ledger), records);
    }
    return ok_status();
  }
  virtual Result<std::vector<Reservation>> load_reservations() = 0;
};

}  // namespace ramguard
