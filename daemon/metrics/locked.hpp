#pragma once
// One part of the exporter under the exporter's lock: the lock is held while the handle lives,
// normally to the end of the statement that asked for it (`exporter.targets()->...`). Two
// handles in one statement would wait on each other: take one at a time.

#include <mutex>

namespace ramguard {

template <class Part>
class Locked {
 public:
  Locked(std::mutex& mutex, Part& part) : lock_(mutex), part_(part) {}
  Part* operator->() const { return &part_; }
  Part& operator*() const { return part_; }

 private:
  std::unique_lock<std::mutex> lock_;
  Part& part_;
};

}  // namespace ramguard
