#pragma once
// What the node can still give: MemTotal and MemAvailable of /proc/meminfo. Admission reads it
// at every decision, so the file is opened once and read with one pread per decision.

#include <cstdint>
#include <filesystem>
#include <string_view>
#include <vector>

#include "procfs/unique_fd.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

struct NodeMemory {
  std::uint64_t total_bytes = 0;      // MemTotal
  std::uint64_t available_bytes = 0;  // MemAvailable: the kernel's estimate of what a new
                                      // allocation can get without swapping
};

// /proc/meminfo text; both lines must be there (MemAvailable exists since Linux 3.14).
Result<NodeMemory> parse_meminfo(std::string_view text);

class MeminfoReader {
 public:
  // Opens PROC_ROOT/meminfo; the error names the path.
  static Result<MeminfoReader> open(const std::filesystem::path& proc_root);
  Result<NodeMemory> read() const;

 private:
  MeminfoReader() = default;
  std::filesystem::path path_;
  UniqueFd fd_;
};

}  // namespace ramguard
