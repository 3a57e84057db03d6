#pragma once
// A run's window on its process: complete (status) or periodic (statm) readings on demand and
// the high-water-mark reset. The registry implements it over the sampler; tests script it.

#include <vector>

#include "model/reading.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

class TargetProbe {
 public:
  virtual ~TargetProbe() = default;
  virtual Result<MemoryReading> read(bool complete) = 0;
  virtual Status reset_hwm() = 0;
  // What the daemon's reads of the process cost, the last read() included; scripted: none.
  virtual ReadTiming read_timing() const { return {}; }
  // Tree scope: each process's counted memory at the last complete read; empty otherwise.
  virtual std::vector<ProcessShare> tree_shares() { return {}; }
};

}  // namespace ramguard
