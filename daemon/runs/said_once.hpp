#pragma once
// What a run has already said, by a typed key: a verdict that would repeat at every mark or
// reading (a phase's forecast, a gap, a plan check) is emitted the first time only.

#include <set>

namespace ramguard {

template <typename Key>
class SaidOnce {
 public:
  // True the first time `key` is seen, false after.
  bool first(const Key& key) { return said_.insert(key).second; }
  bool contains(const Key& key) const { return said_.contains(key); }
  template <typename Pred>
  void forget_if(Pred pred) {
    std::erase_if(said_, pred);
  }

 private:
  std::set<Key> said_;
};

}  // namespace ramguard
