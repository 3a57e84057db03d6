#pragma once
// The physical limits marks_bench divides by, measured in the same run on the same machine.
// None of them runs ramguard code: each is the least work an acknowledged mark must do (a
// round trip on a Unix socket, a `status` pread of the target for its exact peak, a
// `clear_refs` write to reset it, and a log append before the reply), done by hand.
#include <sys/types.h>

#include <filesystem>
#include <vector>

namespace ramguard::testing {

// Round trips of a mark-sized line to a one-connection echo thread, in ns.
std::vector<double> echo_round_trips(const std::filesystem::path& dir, int count);

// One client's acknowledged marks done in sequence, each timed as a whole (ns): the echo round
// trip, a `status` pread of `target`, its `clear_refs` write and a 12 KiB append to a log in
// `state_dir`; with `fdatasync`, also the flush a synchronous=FULL commit would wait for.
std::vector<double> acknowledged_marks(const std::filesystem::path& dir,
                                       const std::filesystem::path& state_dir, pid_t target,
                                       int count, bool fdatasync);

// The same limit for many clients at once: `targets.size()` client threads, each closed-loop
// (it waits for its reply before its next request) on a connection of its own, `count` round
// trips each, against one server thread that does, per request, the `status` pread and the
// `clear_refs` write of that client's target and, per turn of its epoll loop, one 12 KiB log
// append before it sends the turn's replies (group commit). The most marks per second this
// machine can acknowledge with that many coordinators, and the latencies it takes.
struct ConcurrentLimit {
  double per_second = 0;
  std::vector<double> ns;  // every round trip
};
ConcurrentLimit concurrent_acknowledged_marks(const std::filesystem::path& dir,
                                              const std::filesystem::path& state_dir,
                                              const std::vector<pid_t>& targets, int count);

}  // namespace ramguard::testing
