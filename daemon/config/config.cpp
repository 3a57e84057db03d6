#include "config/config.hpp"

#include <algorithm>

namespace ramguard {

MemoryPlan default_fedavg_plan() {
  // Fitted to real PyTorch coordinators (client/python/examples/torch_fedavg*.py; docs/admission.md
  // has the measured table): aggregation holds the global state, one update per host and the
  // result, and the interpreter with the framework adds 0.14-0.145 GB under jemalloc, so 0.16 GB
  // of overhead keeps the first estimate at or above the exact peak at 0.09 and 0.35 GB models
  // (a fixed 0.3 GB put the small one 32% above). glibc's retention is the estimator's allocator
  // term. Synchronization serializes the state into a growing buffer: the buffer, and the copy a
  // resize makes of it. A 2.5 GB model on two hosts: 4 x 2.5 + 0.16 = 10.16 GB, above the
  // 9.6 GB the final build of daemon/README.md's investigation used.
  MemoryPlan plan;
  plan.name = "fedavg";
  plan.overhead_bytes = 160'000'000;
  plan.phases = {
      {"load", {{"global", 1, false}, {"staging", 1, false}}},
      {"aggregation", {{"global", 1, false}, {"host_updates", 1, true}, {"result", 1, false}}},
      {"synchronization",
       {{"global", 1, false}, {"serialized", 1, false}, {"resize_copy", 1, false}}},
      {"save", {{"global", 1, false}, {"serialized", 1, false}}},
  };
  return plan;
}

PhaseGapConfig default_phase_gap() {
  return {{"aggregation", PhaseEdge::Edge::kEnd},
          {"synchronization", PhaseEdge::Edge::kBegin},
          std::chrono::seconds(10)};
}

std::uint64_t user_reserve_cap_bytes(const AdmissionConfig& admission, std::uint64_t budget_bytes) {
  if (admission.max_reserved_per_user_bytes != 0) return admission.max_reserved_per_user_bytes;
  const double share = admission.max_reserved_per_user_fraction * static_cast<double>(budget_bytes);
  return share <= 0 ? 0 : std::max<std::uint64_t>(1, static_cast<std::uint64_t>(share));
}

std::string PhaseEdge::to_string() const {
  return phase + (edge == Edge::kBegin ? ".begin" : ".end");
}

std::string PhaseGapConfig::name() const {
  return from.to_string() + " -> " + to.to_string();
}

}  // namespace ramguard
