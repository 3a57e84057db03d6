#pragma once
// The one fuzz entry point for the procfs parsers, shared by the libFuzzer target and the
// fuzz_smoke gtest, so every ctest run exercises exactly what the fuzzer does. Returns false
// when an invariant of a successful parse is broken (a parser bug); errors are fine.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "procfs/cgroup.hpp"
#include "procfs/parse.hpp"

namespace ramguard::fuzz {

inline bool procfs_parse_one(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  bool ok = true;
  if (auto statm = parse_statm(text); statm.ok()) {
    ok = ok && statm->shared <= statm->resident && size <= kMaxStatmBytes;
  }
  if (auto status = parse_status(text); status.ok()) {
    ok = ok && status->name.size() < size && size <= kMaxStatusBytes;
  }
  if (auto stat = parse_stat(text); stat.ok()) {
    // comm sits between '(' and ')' inside the text, and the pid is positive.
    ok = ok && stat->comm.size() + 2 < size && stat->pid > 0 && size <= kMaxStatBytes &&
         text.find(stat->comm) != std::string_view::npos;
  }
  if (auto cg = parse_memory_cgroup(text); cg.ok()) {
    ok = ok && cg->path.starts_with('/') && cg->path.find("/..") == std::string::npos;
  }
  (void)parse_oom_kill_count(text).ok();
  return ok;
}

}  // namespace ramguard::fuzz
