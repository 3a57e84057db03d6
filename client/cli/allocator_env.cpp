#include "allocator_env.hpp"

#include <dlfcn.h>
#include <gnu/libc-version.h>
#include <unistd.h>

#include <filesystem>

namespace ramguard::cli {
namespace {

constexpr const char* kJemallocSoname = "libjemalloc.so.2";

// Where Debian installs jemalloc: beside this process's libc (/lib/<multiarch>, also reached as
// /usr/lib/<multiarch>), else /usr/local/lib. Not dlopen(): jemalloc's TLS model cannot be
// loaded after startup ("cannot allocate memory in static TLS block"), only preloaded.
Result<std::string> jemalloc_path() {
  std::vector<std::string> candidates;
  Dl_info libc{};
  if (::dladdr(reinterpret_cast<void*>(&::gnu_get_libc_version), &libc) != 0 &&
      libc.dli_fname != nullptr) {
    const std::string dir = std::filesystem::path(libc.dli_fname).parent_path().string();
    candidates.push_back(dir + "/" + kJemallocSoname);
    if (dir.rfind("/lib", 0) == 0) candidates.push_back("/usr" + dir + "/" + kJemallocSoname);
  }
  candidates.push_back(std::string("/usr/local/lib/") + kJemallocSoname);
  std::string tried;
  for (const std::string& path : candidates) {
    if (::access(path.c_str(), R_OK) == 0) return path;
    tried += (tried.empty() ? "" : ", ") + path;
  }
  return Error{std::string("--allocator jemalloc: ") + kJemallocSoname + " is not in " + tried +
               "; install Debian's libjemalloc2"};
}

}  // namespace

Result<Environment> allocator_environment(const std::string& allocator,
                                          const char* current_ld_preload) {
  if (allocator.empty() || allocator == "glibc") return Environment{};
  if (allocator == "glibc-tuned") {
    return Environment{{"MALLOC_ARENA_MAX", "1"},
                       {"MALLOC_MMAP_THRESHOLD_", "1048576"},
                       {"MALLOC_TRIM_THRESHOLD_", "134217728"}};
  }
  if (allocator == "jemalloc") {
    auto path = jemalloc_path();
    if (!path.ok()) return path.error();
    std::string preload = *path;
    // Keep what the caller preloads already (after jemalloc, which must come first to
    // interpose malloc).
    if (current_ld_preload != nullptr && current_ld_preload[0] != '\0') {
      preload += std::string(" ") + current_ld_preload;
    }
    return Environment{{"LD_PRELOAD", preload}};
  }
  return Error{"--allocator '" + allocator + "' is not known; use jemalloc, glibc-tuned or glibc"};
}

}  // namespace ramguard::cli
