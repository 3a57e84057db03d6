#pragma once
// Every check of a request's shape, in one place, made before any handler runs: each number
// has a range (a host count of 4294967295 or a model of 18 EB per copy is a mistake to name, not
// a figure to multiply into a verdict), each text a length and an alphabet (the wire rules of
// ramguard/base/protocol.hpp), each enum a value. Handlers convert what passed; what they still
// refuse depends on state (a run that is not the caller's, a ledger that is unavailable).
// Range errors name the field as the client wrote it (JSON names).

#include <cstddef>
#include <cstdint>
#include <limits>

#include "ramguard.pb.h"
#include "ramguard/base/protocol.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard::control {

// Far above any real coordinator, far below where byte arithmetic could wrap.
inline constexpr std::uint64_t kMaxRequestBytesFigure = 1'000'000'000'000'000;  // 1 PB
inline constexpr std::uint64_t kMaxParameterCount = 1'000'000'000'000'000;      // 10^15
inline constexpr double kMaxBytesPerParameter = 64;
inline constexpr std::uint32_t kMaxHosts = 1'000'000;
inline constexpr std::uint32_t kMaxDeclaredRounds = 100'000'000;
inline constexpr double kMaxProbeSeconds = 24 * 3600.0;
// The latest time in microseconds that nanoseconds since the epoch still hold (year 2262): a
// mark's atUnixUs above it would wrap when converted, and come out in the past.
inline constexpr std::int64_t kMaxUnixUs = std::numeric_limits<std::int64_t>::max() / 1000;

// This node's physical memory (sysconf): no process's RSS, so no probe's figure, is above it.
std::uint64_t physical_memory_bytes();

// ok, or INVALID_ARGUMENT naming the first field that breaks its rule, and the rule.
// `node_memory_bytes` bounds the RSS figures of gc and trim probes.
Status check_request(const v1::Request& request,
                     std::uint64_t node_memory_bytes = physical_memory_bytes());

}  // namespace ramguard::control
