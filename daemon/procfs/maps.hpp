#pragma once
// Where a census's address ranges lie in a process: a pure parser of /proc/PID/maps text, the
// classification of each mapping (anonymous, file-backed, shared memory, device), the placement
// of ranges against them, and the resident part of ranges read from /proc/PID/pagemap (a read
// proportional to the ranges' pages, not the page-table walk of the whole process that smaps
// costs).

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/census.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

inline constexpr std::size_t kMaxMapsBytes = 64 * 1024 * 1024;

enum class MappingKind { kAnon, kFile, kShmem, kDevice };
const char* mapping_kind_name(MappingKind kind);

struct Mapping {
  std::uint64_t start = 0;
  std::uint64_t end = 0;  // exclusive
  bool shared = false;    // perms' fourth letter 's'
  std::uint64_t inode = 0;
  std::string path;  // "" for anonymous; "[heap]", "/dev/shm/x (deleted)", ...
  MappingKind kind = MappingKind::kAnon;
};

// One mapping per line, sorted by start as the kernel writes them. A malformed line is an
// Error naming it.
Result<std::vector<Mapping>> parse_maps(std::string_view text);

// How a mapping's path and flags classify it: no path, [heap], [stack], [anon:...] are
// anonymous; /dev/shm/, /memfd:, /SYSV and a shared "/dev/zero (deleted)" are shared memory;
// other /dev/ paths are device mappings; any other path is a file.
MappingKind classify_mapping(bool shared, std::string_view path);

// Places every range of the census's groups against the mappings (ranges may span several);
// bytes in no mapping are unmapped. Files: the file-backed paths, the largest first (at most 8).
CensusPlacement place_ranges(std::span<const Mapping> maps, std::span<const CensusRange> ranges);

// Reads PROC_ROOT/PID/maps and, for the resident part, PROC_ROOT/PID/pagemap (bit 63: page
// present). Costs one maps read and 8 bytes per page of the ranges. A pagemap that cannot be
// read leaves resident_known false; a maps read that fails sets error.
CensusPlacement place_census(const std::filesystem::path& proc_root, pid_t pid,
                             std::span<const CensusRange> ranges, std::uint64_t page_size_bytes);

}  // namespace ramguard
