#pragma once
// What the daemon and the clients must agree on about the control protocol beyond the schema in
// proto/ramguard.proto. The Python client repeats these values; tests/python checks that it
// matches this file.

#include <cstddef>
#include <cstdint>

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

}  // namespace ramguard::protocol
