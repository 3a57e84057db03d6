#pragma once
// The client's census of its large objects (who holds them) and where the daemon placed them
// in the process's mappings: kept per round in the run's ledger, stored in a side table, shown
// in the report's "What holds the memory" and named by the growth verdict.

#include <cstdint>
#include <string>
#include <vector>

namespace ramguard {

struct CensusRange {
  std::uint64_t address = 0;
  std::uint64_t nbytes = 0;
};

struct CensusGroup {
  std::string holder;           // the path from a root, or the cycle's object when unreachable
  bool reachable = true;        // false: only a reference cycle (or outside Python) keeps it
  std::string cycle;            // the cycle's shape when not reachable
  std::string kind;             // state, module, tensor, array(s), bytes, ...
  std::uint64_t bytes = 0;      // host RAM, each storage once
  std::uint64_t gpu_bytes = 0;  // listed apart: not in RSS
  std::uint32_t storages = 0;
  std::uint32_t objects = 0;
  std::string dtype;
  std::uint64_t pinned_bytes = 0;
  std::uint64_t shared_bytes = 0;
  std::vector<CensusRange> ranges;  // not stored: placed when the census arrives
};

// Where a census's ranges lie in /proc/PID/maps, and how much of them is resident (pagemap).
struct CensusPlacement {
  std::uint64_t anon_bytes = 0;
  std::uint64_t file_bytes = 0;
  std::uint64_t shmem_bytes = 0;
  std::uint64_t device_bytes = 0;
  std::uint64_t unmapped_bytes = 0;
  std::uint64_t resident_bytes = 0;
  bool resident_known = false;
  std::vector<std::string> files;  // file-backed mappings' paths, the largest first
  std::string error;               // why nothing was placed
};

struct CensusRecord {
  std::uint32_t round = 0;  // the round end it went with; the run's end: the last round
  bool at_end = false;
  std::int64_t at_unix_ms = 0;
  std::string mode;
  std::string partial;  // why it stopped early; empty: complete
  double duration_seconds = 0;
  std::uint64_t objects_seen = 0;
  std::uint32_t storages = 0;
  std::uint64_t host_bytes = 0;
  std::uint64_t gpu_bytes = 0;
  std::uint64_t pinned_bytes = 0;
  std::uint64_t shared_bytes = 0;
  std::uint64_t unreachable_bytes = 0;
  std::uint32_t other_groups = 0;
  std::uint64_t other_bytes = 0;
  std::vector<CensusGroup> groups;  // the largest first
  CensusPlacement placement;
  // The gap, against the mark's reading: counted = anon + shmem + swap; explained = the
  // census's resident bytes (host bytes when pagemap was not read) + the allocator's free bytes.
  std::uint64_t rss_bytes = 0;
  std::uint64_t counted_bytes = 0;
  std::uint64_t allocator_free_bytes = 0;

  std::uint64_t explained_bytes() const {
    return (placement.resident_known ? placement.resident_bytes : host_bytes) +
           allocator_free_bytes;
  }
  std::int64_t unexplained_bytes() const {
    return static_cast<std::int64_t>(counted_bytes) - static_cast<std::int64_t>(explained_bytes());
  }
};

// Every group's ranges, in order: what the daemon places.
inline std::vector<CensusRange> census_ranges(const CensusRecord& census) {
  std::vector<CensusRange> out;
  for (const CensusGroup& g : census.groups)
    out.insert(out.end(), g.ranges.begin(), g.ranges.end());
  return out;
}

inline constexpr std::size_t kCensusMaxGroups = 32;
inline constexpr std::size_t kCensusMaxRanges = 1024;  // over all groups
inline constexpr std::size_t kCensusMaxText = 256;     // bytes of a holder, cycle or partial
inline constexpr std::size_t kCensusHeld = 16;         // censuses a running run keeps in memory

}  // namespace ramguard
