#pragma once
// When a mark happened. A client that stops waiting for a reply (its deadline) reports the mark
// as not delivered; a mark read after that deadline (the daemon was stopped, or busy) must not
// be applied later, or the run's record would disagree with the client and carry a phase as
// long as the stop. A mark read in time is recorded at the client's own time, so a mark sent
// again after an outage (a resynchronised phase end) keeps the time it really happened.

#include <chrono>
#include <optional>

#include "common/clock.hpp"
#include "ramguard/base/result.hpp"

namespace ramguard {

// How far the client's clock may run ahead of the daemon's (one host: the same clock, so
// this only catches a client that sends nonsense).
inline constexpr std::chrono::seconds kMaxClientAheadSeconds{1};

// DEADLINE_EXCEEDED when `now` is past the client's deadline; INVALID_ARGUMENT when the
// client's time is more than kMaxClientAheadSeconds ahead of `now`.
Status check_mark_times(std::optional<std::chrono::nanoseconds> client_wall,
                        std::optional<std::chrono::nanoseconds> deadline_wall, const Instant& now);

// The mark's instant: `read_at` moved back to the client's time, but never before `previous`
// (the run's last mark) nor after `read_at`.
Instant mark_instant(const Instant& read_at, std::optional<std::chrono::nanoseconds> client_wall,
                     const Instant& previous);

}  // namespace ramguard
