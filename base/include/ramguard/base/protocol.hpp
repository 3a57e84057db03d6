#pragma once
// What the daemon and the clients must agree on about the control protocol beyond the schema in
// proto/ramguard.proto. The Python client repeats these values; tests/python checks that it
// matches this file.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace ramguard::protocol {

// Sent in every request and reply; the daemon refuses any other.
inline constexpr std::uint32_t kVersion = 1;
// The daemon's default cap on one request line (control.max_frame); clients refuse to send
// longer ones rather than have the daemon drop the connection.
inline constexpr std::size_t kMaxRequestBytes = 64 * 1024;
// Clients' cap on one reply line: a report with its samples is far larger than a request, but
// a bound all the same.
inline constexpr std::size_t kMaxReplyBytes = 64 * 1024 * 1024;

// The environment `ramguard exec` hands its child, and clients read.
inline constexpr const char* kSocketEnv = "RAMGUARD_SOCKET";
inline constexpr const char* kRunEnv = "RAMGUARD_RUN";
// Set with RAMGUARD_RUN by a launcher whose run the process is (the Slurm plugin): a client's
// start_run for this process attaches to that run instead of starting a second one.
inline constexpr const char* kRunAttachEnv = "RAMGUARD_RUN_ATTACH";

// A client whose daemon does not answer retries after this, doubling up to the max.
inline constexpr std::uint32_t kRetryFirstMilliseconds = 500;
inline constexpr std::uint32_t kRetryMaxMilliseconds = 30000;

// Every PID field is 1 to PID_MAX_LIMIT (64-bit Linux), or 0 for the caller's own.
inline constexpr std::uint32_t kMaxPid = 4'194'304;

// What one request may carry. Names become metric labels, ledger rows and log fields: short.
inline constexpr std::size_t kMaxJobBytes = 128;
inline constexpr std::size_t kMaxLabels = 32;
inline constexpr std::size_t kMaxLabelKeyBytes = 64;
inline constexpr std::size_t kMaxLabelValueBytes = 256;
inline constexpr std::size_t kMaxCgroupPathBytes = 4096;
inline constexpr std::size_t kMaxFailureBytes = 256;  // a run end's failure text
// Run and reservation ids the daemon makes are 24 characters ("r-20261204-184500-a1b2c3"):
// a longer one is no id of ours, refused before it is looked up, logged or echoed.
inline constexpr std::size_t kMaxIdBytes = 64;
// A request's own id, echoed in its reply: a client counter or a UUID fits.
inline constexpr std::size_t kMaxRequestIdBytes = 64;
inline constexpr std::size_t kMaxCompareRuns = 100;
inline constexpr std::size_t kDefaultListRuns = 20;
inline constexpr std::size_t kMaxListRuns = 1000;

// A phase name: in marks, in the plans' phases and in the phase gap rules alike, so a plan
// phase that passes --check-config can match a mark.
inline constexpr std::size_t kMaxPhaseBytes = 64;
inline constexpr const char* kPhaseNameRule = "1 to 64 characters of a-z, 0-9, '_', '.', '-'";
// The alphabet of the names above and below: lower case, digits, '_', '.', '-'.
constexpr bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}
constexpr bool is_phase_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxPhaseBytes) return false;
  for (const char c : name) {
    if (!is_name_char(c)) return false;
  }
  return true;
}

// An allocator's name ("glibc", "jemalloc") in an admission or allocator stats goes into
// verdict summaries and admission reasons; empty when the client does not report one.
inline constexpr std::size_t kMaxAllocatorNameBytes = 32;
constexpr bool is_allocator_name(std::string_view name) {
  if (name.size() > kMaxAllocatorNameBytes) return false;
  for (const char c : name) {
    if (!is_name_char(c)) return false;
  }
  return true;
}

}  // namespace ramguard::protocol
