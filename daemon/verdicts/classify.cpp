#include "verdicts/classify.hpp"

#include <algorithm>
#include <string>

#include "ramguard/base/units.hpp"
#include "verdicts/describe.hpp"
#include "verdicts/release.hpp"

namespace ramguard {

const char* growth_class_name(GrowthClass c) {
  switch (c) {
    case GrowthClass::kReferenceCycles:
      return "reference_cycles";
    case GrowthClass::kLiveObjects:
      return "live_objects";
    case GrowthClass::kAllocatorRetention:
      return "allocator_retention";
    case GrowthClass::kOtherProcesses:
      return "other_processes";
    case GrowthClass::kOutsideHeap:
      return "outside_heap";
  }
  return "live_objects";
}

namespace {

double floor_of(const BoundaryRecord& b) {
  return static_cast<double>(b.counted_floor_bytes());
}

double delta(std::uint64_t now, std::uint64_t before) {
  return static_cast<double>(now) - static_cast<double>(before);
}

}  // namespace

std::optional<GrowthClassification> classify_growth(std::span<const BoundaryRecord> boundaries,
                                                    std::uint64_t model_bytes,
                                                    const DetectorParams& params, Scope scope) {
  if (boundaries.empty()) return std::nullopt;
  const BoundaryRecord& cur = boundaries.back();
  const BoundaryRecord* prev =
      boundaries.size() >= 2 ? &boundaries[boundaries.size() - 2] : nullptr;
  const double gmin = static_cast<double>(params.growth_min_bytes);
  const bool own_process = scope == Scope::kProcess;

  GrowthClassification c;
  std::string detail;
  if (cur.gc && own_process) {
    // The gc probe's RSS is the coordinator's own: comparable with a process floor only.
    const double before = static_cast<double>(cur.gc->rss_before_bytes);
    c.gc_freed_bytes = std::max(0.0, before - static_cast<double>(cur.gc->rss_after_bytes));
    c.rss_growth_bytes = prev ? before - floor_of(*prev) : c.gc_freed_bytes;
    if (c.gc_freed_bytes >= gmin && c.gc_freed_bytes >= 0.5 * c.rss_growth_bytes) {
      c.growth_class = GrowthClass::kReferenceCycles;
      detail = "gc.collect() freed " + format_bytes(c.gc_freed_bytes) +
               copies_note(c.gc_freed_bytes, model_bytes) + " of the round's " +
               format_bytes(c.rss_growth_bytes) + " growth: memory held by reference cycles";
    }
  }
  if (detail.empty() && prev && prev->allocator && cur.allocator) {
    c.rss_growth_bytes = floor_of(cur) - floor_of(*prev);
    if (c.rss_growth_bytes < gmin) return std::nullopt;
    c.allocated_growth_bytes =
        delta(cur.allocator->allocated_bytes, prev->allocator->allocated_bytes);
    c.retained_growth_bytes = delta(cur.allocator->retained_bytes, prev->allocator->retained_bytes);
    const std::string grew = "the counted floor (anon + shmem + swap) grew " +
                             format_bytes(c.rss_growth_bytes) +
                             copies_note(c.rss_growth_bytes, model_bytes);
    if (c.allocated_growth_bytes >= 0.5 * c.rss_growth_bytes) {
      c.growth_class = GrowthClass::kLiveObjects;
      detail = "allocated bytes grew " + format_bytes(c.allocated_growth_bytes) + " while " + grew +
               ": live objects are being kept";
    } else if (c.retained_growth_bytes >= 0.5 * c.rss_growth_bytes) {
      // Measured, not inferred: the allocator says it keeps the freed memory.
      c.growth_class = GrowthClass::kAllocatorRetention;
      detail = grew + " while allocated bytes changed " + format_bytes(c.allocated_growth_bytes) +
               " and the free memory the allocator keeps grew " +
               format_bytes(c.retained_growth_bytes) +
               ": freed memory retained by the allocator; to return it, " +
               allocator_remedy(std::string());
    } else if (!own_process) {
      c.growth_class = GrowthClass::kOtherProcesses;
      detail = grew + " while the coordinator's heap changed " +
               format_bytes(c.allocated_growth_bytes + c.retained_growth_bytes) +
               " (allocated and kept free): the growth is in other processes of the " +
               scope_name(scope) + ", whose heaps the allocator probe does not see";
    } else {
      c.growth_class = GrowthClass::kOutsideHeap;
      detail = grew + " while the allocator's heap changed " +
               format_bytes(c.allocated_growth_bytes + c.retained_growth_bytes) +
               " (allocated and kept free): the growth is not in the allocator's heap (mmap, "
               "page cache, shmem)";
    }
  }
  if (detail.empty()) return std::nullopt;

  std::map<std::string, double> figures{{"rss_growth_bytes", c.rss_growth_bytes}};
  if (cur.gc && own_process) figures["gc_freed_bytes"] = c.gc_freed_bytes;
  if (cur.allocator) {
    figures["allocated_growth_bytes"] = c.allocated_growth_bytes;
    figures["retained_growth_bytes"] = c.retained_growth_bytes;
  }
  add_copies_figure(figures, "rss_growth_copies", c.rss_growth_bytes, model_bytes);
  std::string summary = std::string(growth_class_name(c.growth_class)) + " in round " +
                        std::to_string(cur.round) + ": " + detail + ".";
  c.verdict = make_verdict(verdict_kind::kGrowthClass, Severity::kInfo, true, cur.round, "",
                           std::move(summary), std::move(figures), cur.reading.at);
  return c;
}

}  // namespace ramguard
