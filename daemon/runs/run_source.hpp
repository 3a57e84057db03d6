#pragma once
// Where restart recovery reads what was active: the ledger store implements it.

#include <vector>

#include "model/ledger.hpp"
#include "ramguard/base/result.hpp"
#include "runs/observer.hpp"

namespace ramguard {

class RunSource {
 public:
  virtual ~RunSource() = default;
  virtual Result<std::vector<RunLedger>> load_active_runs() = 0;
  virtual Result<std::vector<Reservation>> load_reservations() = 0;
};

}  // namespace ramguard
