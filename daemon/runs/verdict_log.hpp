#pragma once
// A run's verdicts as they leave the machine: each is appended to the ledger, persisted,
// logged and handed to the coordinator in exactly one reply; the oldest go past the held count.

#include <cstddef>
#include <functional>
#include <vector>

#include "model/ledger.hpp"
#include "runs/run_params.hpp"

namespace ramguard {

class VerdictLog {
 public:
  // ledger: the run's, whose verdicts this log appends to (it outlives the log).
  VerdictLog(RunLedger& ledger, const RunParams& params) : ledger_(ledger), params_(params) {}

  // Appends `verdict`, has `persist` write it, trims and logs it; `out`: also handed there.
  void emit(Verdict verdict, const std::function<void(const Verdict&)>& persist,
            std::vector<Verdict>* out = nullptr);
  // A verdict read back on resume: the coordinator heard of it before the restart.
  void resumed(Verdict verdict);
  // Every verdict not yet in a reply, once.
  std::vector<Verdict> take_unreplied();
  // exact: down to the held count, not only past a quarter more (a resumed run read whole).
  void trim(bool exact = false);
  std::size_t replied() const { return replied_; }

 private:
  RunLedger& ledger_;
  const RunParams& params_;
  std::size_t replied_ = 0;  // ledger_.verdicts up to here went out in a reply
};

}  // namespace ramguard
