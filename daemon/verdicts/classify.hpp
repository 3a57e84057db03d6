#pragma once
// What kind of growth a round showed, when the client sent facts at its round boundaries:
//  - reference cycles: the gc probe (RSS just before / after gc.collect()) frees most of the
//    round's growth (>= growth_min_bytes and >= half of it). Memory that only cyclic garbage
//    collection returns, as in the investigation in daemon/README.md.
//  - live objects: allocator facts show allocated bytes growing with the floor (>= half of it).
//  - allocator retention: the floor grows while allocated bytes stay flat and the free memory
//    the allocator keeps (retained_bytes) grows by at least half of it: measured, not inferred.
//  - other processes (tree and cgroup scope): neither grew; the probe sees the coordinator's
//    heap only, so the growth is in the other processes (tree attribution names them).
//  - outside the heap (process scope): neither grew; mmap, page cache or shmem.
// Judged on the last two boundaries; growth is of the counted floors (counted_floor_bytes: anon
// + shmem + swap), the gc probe's pre-collection RSS when there is one (process scope only: the
// probe's RSS is the coordinator's), since the floor may be read after the collection.

#include <optional>
#include <span>
#include <string_view>

#include "model/ledger.hpp"
#include "verdicts/params.hpp"

namespace ramguard {

enum class GrowthClass {
  kReferenceCycles,
  kLiveObjects,
  kAllocatorRetention,
  kOtherProcesses,
  kOutsideHeap
};
const char* growth_class_name(GrowthClass c);  // "reference_cycles", ...

struct GrowthClassification {
  GrowthClass growth_class = GrowthClass::kLiveObjects;
  double rss_growth_bytes = 0;        // this round's growth (before any gc)
  double gc_freed_bytes = 0;          // gc probe: rss_before - rss_after
  double allocated_growth_bytes = 0;  // allocator facts: allocated delta
  double retained_growth_bytes = 0;   // allocator facts: kept-free delta
  Verdict verdict;                    // kind growth_class; summary starts with the class
};

// nullopt when the facts are missing or the round did not grow enough to classify. scope is
// the run's.
std::optional<GrowthClassification> classify_growth(std::span<const BoundaryRecord> boundaries,
                                                    std::uint64_t model_bytes,
                                                    const DetectorParams& params,
                                                    Scope scope = Scope::kProcess);

}  // namespace ramguard
