#pragma once
// Pure parsers of /proc/PID/{statm,status,stat} text. No I/O: the reader hands them what it
// read, tests and the fuzzer hand them anything. Hostile text yields an Error, never a crash.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ramguard/base/result.hpp"

namespace ramguard {

// Largest texts accepted; real files are far smaller, anything bigger is not what we expect.
inline constexpr std::size_t kMaxStatmBytes = 4096;
inline constexpr std::size_t kMaxStatBytes = 16 * 1024;
inline constexpr std::size_t kMaxStatusBytes = 1024 * 1024;

// /proc/PID/statm, in pages.
struct StatmPages {
  std::uint64_t size = 0;
  std::uint64_t resident = 0;
  std::uint64_t shared = 0;  // file-backed and shmem resident pages
  std::uint64_t text = 0;
  std::uint64_t data = 0;
};

// The lines of /proc/PID/status that ramguard uses, sizes converted from kB to bytes.
struct StatusFields {
  std::string name;
  char state = '?';
  std::uint32_t real_uid = 0;
  std::uint64_t vm_rss_bytes = 0;
  std::uint64_t vm_hwm_bytes = 0;
  std::uint64_t rss_anon_bytes = 0;
  std::uint64_t rss_file_bytes = 0;
  std::uint64_t rss_shmem_bytes = 0;
  std::uint64_t vm_swap_bytes = 0;
};

// /proc/PID/stat fields 1-4 and 22.
struct StatFields {
  pid_t pid = 0;
  std::string comm;  // between the first '(' and the LAST ')': may hold spaces, ')' or '\n'
  char state = '?';
  pid_t ppid = 0;
  std::uint64_t start_time_ticks = 0;  // clock ticks after boot
};

Result<StatmPages> parse_statm(std::string_view text);
// Every line listed in StatusFields must be present: kernel threads and zombies have no VmRSS,
// and reporting that is better than reading it as zero. A status that says the process is
// exiting (a zombie, or a State line without Vm lines) is an ErrorKind::kNotFound error.
Result<StatusFields> parse_status(std::string_view text);
Result<StatFields> parse_stat(std::string_view text);
// The "Pss:" line of /proc/PID/smaps_rollup, in bytes: resident pages with shared ones split
// among the processes that map them (the tree scope's figure without double counting).
Result<std::uint64_t> parse_smaps_rollup_pss(std::string_view text);

// A decimal unsigned integer, the whole of `text`: no sign, no spaces, no overflow.
Result<std::uint64_t> parse_decimal_u64(std::string_view text, std::string_view what);

}  // namespace ramguard
