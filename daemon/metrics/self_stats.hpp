#pragma once
// The daemon's own cost: its RSS from /proc/self/statm and jemalloc's statistics. The guard
// must never be the leak, so operators need these next to the target's numbers.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string_view>

#include "ramguard/base/result.hpp"

namespace ramguard {

// Field 2 of statm ("size resident shared text lib data dt", in pages). Pure; no I/O.
Result<std::uint64_t> parse_statm_resident_pages(std::string_view text);

// Reads a statm file (for the daemon: /proc/self/statm) and returns resident bytes.
Result<std::uint64_t> read_statm_rss_bytes(const std::filesystem::path& statm);

struct JemallocStats {
  std::uint64_t allocated_bytes = 0;
  std::uint64_t active_bytes = 0;
  std::uint64_t resident_bytes = 0;
  std::uint64_t retained_bytes = 0;
};

// True when jemalloc is linked in (mallctl is a weak symbol: sanitizer builds run without it).
bool jemalloc_linked();

// Refreshes jemalloc's statistics (bumps "epoch") and reads them; nullopt without jemalloc or
// when a statistic cannot be read (jemalloc built without stats).
std::optional<JemallocStats> read_jemalloc_stats();

}  // namespace ramguard
