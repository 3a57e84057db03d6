#pragma once
// A memory plan: for each phase, which model-sized states are alive at once, plus a fixed
// overhead. The estimate is the largest live sum over the phases, never the sum of per-phase
// maxima. Plain data: config parses it, admission computes with it.

#include <cstdint>
#include <string>
#include <vector>

namespace ramguard {

struct PlanState {
  std::string name;       // "global", "host_updates", ...
  double copies = 1;      // model copies alive; multiplied by the host count when per_host
  bool per_host = false;  // written "hosts" (or "2*hosts") in YAML
  friend bool operator==(const PlanState&, const PlanState&) = default;
};

struct PlanPhase {
  std::string phase;  // load, aggregation, synchronization, save, or a free-form name
  std::vector<PlanState> states;
  friend bool operator==(const PlanPhase&, const PlanPhase&) = default;
};

struct MemoryPlan {
  std::string name;
  std::vector<PlanPhase> phases;
  std::uint64_t overhead_bytes = 0;
  friend bool operator==(const MemoryPlan&, const MemoryPlan&) = default;
};

}  // namespace ramguard
