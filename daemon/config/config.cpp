#include "config/config.hpp"

namespace ramguard {

MemoryPlan default_fedavg_plan() {
  // A 2.5 GB model on two hosts peaks in aggregation at 4 x 2.5 + 1.1 = 11.1 GB: the estimate
  // that fits the 16 GB default budget in daemon/README.md's investigation.
  MemoryPlan plan;
  plan.name = "fedavg";
  plan.overhead_bytes = 1'100'000'000;
  plan.phases = {
      {"load", {{"global", 1, false}, {"staging", 1, false}}},
      {"aggregation", {{"global", 1, false}, {"host_updates", 1, true}, {"result", 1, false}}},
      {"synchronization", {{"global", 1, false}, {"outbound", 1, false}}},
      {"save", {{"global", 1, false}, {"serialized", 1, false}}},
  };
  return plan;
}

PhaseGapConfig default_phase_gap() {
  return {{"aggregation", PhaseEdge::Edge::kEnd},
          {"synchronization", PhaseEdge::Edge::kBegin},
          std::chrono::seconds(10)};
}

std::string PhaseEdge::to_string() const {
  return phase + (edge == Edge::kBegin ? ".begin" : ".end");
}

std::string PhaseGapConfig::name() const {
  return from.to_string() + " -> " + to.to_string();
}

}  // namespace ramguard
