#pragma once
// The held histories of a run (marks, boundaries, phases, verdicts) are trimmed by the class
// that owns each; they grow the same way.

#include <algorithm>
#include <cstddef>
#include <vector>

namespace ramguard {

// Grows a held history within its bound: the next push never doubles the capacity past it.
template <typename T>
void keep_room(std::vector<T>& v, std::size_t bound) {
  if (v.size() == v.capacity() && v.size() < bound) {
    v.reserve(std::min(bound, std::max<std::size_t>(16, 2 * v.size())));
  }
}

}  // namespace ramguard
