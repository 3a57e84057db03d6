#pragma once
// `ramguard exec --allocator`: the environment that starts a coordinator with another memory
// allocator, so a run can be compared with the same command under glibc's defaults.
//
//   jemalloc     Debian's libjemalloc.so.2 preloaded: returns freed memory to the kernel by
//                itself (decay), so floors and the release follow what the program holds.
//   glibc-tuned  glibc with one arena, mmap for blocks >= 1 MiB and trimming past 128 MiB free:
//                less retention without a new library; more mmap calls for mid-sized blocks.
//   glibc        nothing changed; recorded as the label so it is the "before" of a compare.

#include <string>
#include <utility>
#include <vector>

#include "ramguard/base/result.hpp"

namespace ramguard::cli {

using Environment = std::vector<std::pair<std::string, std::string>>;

// The variables to set for `allocator` given the caller's LD_PRELOAD (may be null). An error
// names what is missing (jemalloc not installed) rather than letting the dynamic linker ignore
// the preload with a warning nobody reads.
Result<Environment> allocator_environment(const std::string& allocator,
                                          const char* current_ld_preload);

}  // namespace ramguard::cli
