#include "runs/mark_time.hpp"

#include <algorithm>
#include <string>

namespace ramguard {
namespace {

std::string milliseconds_text(std::chrono::nanoseconds d) {
  return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(d).count()) + " ms";
}

}  // namespace

Status check_mark_times(std::optional<std::chrono::nanoseconds> client_wall,
                        std::optional<std::chrono::nanoseconds> deadline_wall, const Instant& now) {
  if (deadline_wall && now.wall > *deadline_wall) {
    return Error{"mark read " + milliseconds_text(now.wall - *deadline_wall) +
                     " after its client's deadline: dropped, not applied (the client has "
                     "reported it as not delivered)",
                 ErrorKind::kDeadlineExceeded};
  }
  if (client_wall && *client_wall - now.wall > kMaxClientAheadSeconds) {
    return Error{"mark.atUnixUs is " + milliseconds_text(*client_wall - now.wall) +
                 " ahead of the daemon's clock (at most " +
                 milliseconds_text(kMaxClientAheadSeconds) + ")"};
  }
  return ok_status();
}

Instant mark_instant(const Instant& read_at, std::optional<std::chrono::nanoseconds> client_wall,
                     const Instant& previous) {
  if (!client_wall) return read_at;
  // How long ago the client made the mark, within [0, time since the previous mark]: the
  // run's marks stay in order and no mark is dated after it was read.
  const auto since_previous =
      std::max(std::chrono::nanoseconds(0), read_at.monotonic - previous.monotonic);
  const auto ago =
      std::clamp(read_at.wall - *client_wall, std::chrono::nanoseconds(0), since_previous);
  return {read_at.monotonic - ago, read_at.wall - ago};
}

}  // namespace ramguard
