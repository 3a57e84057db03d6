#pragma once
// Estimates from a memory plan: the overhead plus the LARGEST live sum over the plan's phases,
// never the sum of per-phase maxima (states of different phases are not alive at once).
// Pure functions over values; the caller looks the plan up in the configuration.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/plan.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

// One state of the dominating phase: copies already multiplied by the host count.
struct EstimateTerm {
  std::string state;
  double copies = 0;
  std::uint64_t bytes = 0;
};

// What the coordinator's C allocator keeps beyond the plan's live states, in model copies, for
// the allocator its client reported at admission. glibc malloc keeps freed tensors' and
// serialization buffers' memory in its heaps: measured against jemalloc (decay 0, which returns
// it) on the two FedAvg coordinators at two model sizes (docs/admission.md), a glibc exact peak
// stood 0 or 1 model copy higher (states through pipes: 1 in every run; hosts in the process: 0
// or 1 between runs of one command); the term is the mean, 0.5, which keeps both within 15%.
// jemalloc and an allocator not reported get none.
inline constexpr double kGlibcRetainedModelCopies = 0.5;
double allocator_retained_copies(std::string_view allocator);

struct Estimate {
  std::uint64_t bytes = 0;  // overhead_bytes + the dominating phase's live sum + allocator term
  std::string plan;
  std::string phase;  // the phase with the largest live sum (the first one on a tie)
  std::uint64_t model_bytes = 0;
  std::uint32_t hosts = 0;
  std::uint64_t overhead_bytes = 0;
  std::vector<EstimateTerm> breakdown;  // the dominating phase's states, in plan order
  std::string allocator;                // as reported: "glibc", "jemalloc" or empty
  double allocator_copies = 0;          // allocator_retained_copies(allocator)
  std::uint64_t allocator_bytes = 0;    // allocator_copies x model_bytes, included in bytes
};

// Errors name the plan, phase and state: no phases, zero model size, per-host states with zero
// hosts, negative or non-finite copies, a total that does not fit in 64 bits.
// `allocator` (the coordinator's, as its client reported it) adds its retained copies to the
// total: what the allocator keeps stays under every phase, so it adds to the largest live sum.
Result<Estimate> estimate_from_plan(const MemoryPlan& plan, std::uint64_t model_bytes,
                                    std::uint32_t hosts, std::string_view allocator = {});

// The same for one phase: what the plan expects alive while `phase` runs, plus the overhead.
// A phase the plan does not list gets the whole plan's estimate (its largest live sum).
Result<Estimate> phase_estimate(const MemoryPlan& plan, const std::string& phase,
                                std::uint64_t model_bytes, std::uint32_t hosts);

// "plan fedavg, aggregation dominates: global 1 x 2.50 GB + host_updates 2 x 2.50 GB +
//  result 1 x 2.50 GB + overhead 1.10 GB = 11.10 GB"; with an allocator term, before the
// overhead "+ allocator 0.5 x 2.50 GB" and after the total "; allocator: glibc malloc keeps
// ~0.5 model copies of freed memory beyond the plan (measured, docs/admission.md); remedy:
// <the release verdict's remedy for that allocator>"
std::string describe_estimate(const Estimate& estimate);

// The model size from a model description. Zero means "not given" (protobuf's defaults), so the
// request may carry model_bytes, or parameter_count and bytes_per_parameter, or all three when
// they agree within 1%. Errors: neither given, only one of parameter_count/bytes_per_parameter,
// a negative or non-finite bytes_per_parameter, a product that overflows 64 bits, and both
// forms given with values that disagree.
Result<std::uint64_t> model_bytes_from(std::uint64_t parameter_count, double bytes_per_parameter,
                                       std::uint64_t model_bytes);

}  // namespace ramguard
