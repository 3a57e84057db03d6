#pragma once
// Where restart recovery reads what was active: the ledger store implements it.

#include <functional>
#include <vector>

#include "model/ledger.hpp"
#include "ramguard/base/result.hpp"
#include "runs/observer.hpp"

namespace ramguard {

class RunSource {
 public:
  virtual ~RunSource() = default;
  virtual Result<std::vector<RunLedger>> load_active_runs() = 0;
  // Hands each active run's ledger to `resume`, oldest first, one at a time, so a restart holds
  // one long run's whole history at once, not every run's (8 runs of 100,000 marks: 247 MB).
  // Only a failure to read the runs at all is an error.
  virtual Status for_each_active_run(const std::function<void(RunLedger)>& resume) {
    auto runs = load_active_runs();
    if (!runs) return runs.error();
    for (RunLedger& ledger : *runs) resume(std::move(ledger));
    return ok_status();
  }
  virtual Result<std::vector<Reservation>> load_reservations() = 0;
};

}  // namespace ramguard
