#include "runs/observer_set.hpp"

#include <algorithm>
#include <string>

#include "common/log.hpp"

namespace ramguard {

void ObserverSet::add(RunObserver* observer) {
  if (observer != nullptr) observers_.push_back(observer);
}

bool ObserverSet::has_durable() const {
  return std::any_of(observers_.begin(), observers_.end(),
                     [](const RunObserver* o) { return o->durable(); });
}

bool ObserverSet::write(std::string_view what, std::string_view run_id,
                        const std::function<Status(RunObserver&)>& fn) {
  bool stored = has_durable();
  for (RunObserver* o : observers_) {
    if (auto s = fn(*o); !s) {
      stored = false;
      if (!o->durable()) continue;
      // The store logs its own state once (write_health); this line is for debugging.
      log::debug("store.write_failed", {{"run", std::string(run_id)},
                                        {"what", std::string(what)},
                                        {"reason", s.error().message}});
      for (RunObserver* each : observers_) each->store_failed(what, s.error().message);
    }
  }
  return stored;
}

void ObserverSet::notify(const std::function<void(RunObserver&)>& fn) {
  for (RunObserver* o : observers_) fn(*o);
}

}  // namespace ramguard
