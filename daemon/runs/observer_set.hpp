#pragma once
// Fans every event out to the plugged-in observers. A write counts as stored when a durable
// observer is plugged in and every observer accepted it; a failed durable write is logged once
// per event and announced to all observers (the metrics show the degraded ledger).

#include <functional>
#include <string_view>
#include <vector>

#include "runs/observer.hpp"

namespace ramguard {

class ObserverSet {
 public:
  void add(RunObserver* observer);
  bool has_durable() const;

  // Calls `fn` on every observer; true when stored durably (see above).
  bool write(std::string_view what, std::string_view run_id,
             const std::function<Status(RunObserver&)>& fn);
  void notify(const std::function<void(RunObserver&)>& fn);

 private:
  std::vector<RunObserver*> observers_;
};

}  // namespace ramguard
