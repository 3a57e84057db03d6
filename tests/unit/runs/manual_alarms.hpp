#pragma once
// Alarms that go off only when the test says so, after moving a FakeClock: fire_due() calls
// every alarm whose time the clock has reached, as the loop would, without real time passing.

#include <algorithm>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "common/clock.hpp"
#include "runs/alarm.hpp"

namespace ramguard::test {

class ManualAlarms final : public Alarms {
 public:
  explicit ManualAlarms(const Clock& clock) : clock_(clock) {}
  ~ManualAlarms() override {
    for (ManualAlarm* alarm : alarms_) alarm->owner_ = nullptr;
  }

  std::unique_ptr<Alarm> make() override {
    auto alarm = std::make_unique<ManualAlarm>(this);
    alarms_.push_back(alarm.get());
    return alarm;
  }
  // Calls what is due, oldest deadline first, until nothing is (a call may set another alarm
  // that is due already); returns how many went off.
  int fire_due() {
    int fired = 0;
    for (;;) {
      ManualAlarm* next = nullptr;
      for (ManualAlarm* alarm : alarms_) {
        if (alarm->at_ && *alarm->at_ <= clock_.monotonic() &&
            (next == nullptr || *alarm->at_ < *next->at_)) {
          next = alarm;
        }
      }
      if (next == nullptr) return fired;
      next->at_.reset();
      auto due = std::move(next->due_);
      ++fired;
      due();
    }
  }
  // How many alarms are set and not yet gone off.
  std::size_t armed() const {
    return static_cast<std::size_t>(std::count_if(
        alarms_.begin(), alarms_.end(), [](const ManualAlarm* a) { return a->at_.has_value(); }));
  }
  // The earliest time an alarm is set for.
  std::optional<std::chrono::nanoseconds> next_at() const {
    std::optional<std::chrono::nanoseconds> next;
    for (const ManualAlarm* alarm : alarms_) {
      if (alarm->at_ && (!next || *alarm->at_ < *next)) next = alarm->at_;
    }
    return next;
  }

 private:
  class ManualAlarm final : public Alarm {
   public:
    explicit ManualAlarm(ManualAlarms* owner) : owner_(owner) {}
    ~ManualAlarm() override {
      if (owner_ != nullptr) std::erase(owner_->alarms_, this);
    }
    void set(std::chrono::nanoseconds at_monotonic, std::function<void()> due) override {
      at_ = at_monotonic;
      due_ = std::move(due);
    }
    void cancel() override {
      at_.reset();
      due_ = nullptr;
    }

   private:
    friend class ManualAlarms;
    ManualAlarms* owner_;
    std::optional<std::chrono::nanoseconds> at_;
    std::function<void()> due_;
  };

  const Clock& clock_;
  std::vector<ManualAlarm*> alarms_;
};

}  // namespace ramguard::test
