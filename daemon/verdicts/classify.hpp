#pragma once
// What kind of growth a round showed, when the client sent facts at its round boundaries:
//  - reference cycles: the gc probe (RSS just before / after gc.collect()) frees most of the
//    round's growth (>= growth_min_bytes and >= half of it). Memory that only cyclic garbage
//    collection returns, as in the investigation in daemon/README.md.
//  - live objects: allocator facts show allocated bytes growing with RSS (>= half of it).
//  - allocator retention: RSS grows while allocated bytes stay flat (< half of it): freed
//    memory the allocator keeps.
// Judged on the last two boundaries; RSS growth uses the settled floors (the gc probe's
// pre-collection RSS when there is one, since the floor may be read after the collection).

#include <optional>
#include <span>

#include "model/ledger.hpp"
#include "verdicts/params.hpp"

namespace ramguard {

enum class GrowthClass { kReferenceCycles, kLiveObjects, kAllocatorRetention };
const char* growth_class_name(GrowthClass c);  // "reference_cycles", ...

struct GrowthClassification {
  GrowthClass growth_class = GrowthClass::kLiveObjects;
  double rss_growth_bytes = 0;        // this round's growth (before any gc)
  double gc_freed_bytes = 0;          // gc probe: rss_before - rss_after
  double allocated_growth_bytes = 0;  // allocator facts: allocated delta
  Verdict verdict;                    // kind growth_class; summary starts with the class
};

// nullopt when the facts are missing or the round did not grow enough to classify.
std::optional<GrowthClassification> classify_growth(std::span<const BoundaryRecord> boundaries,
                                                    std::uint64_t model_bytes,
                                                    const DetectorParams& params);

}  // namespace ramguard
