#pragma once
// libprotobuf reports some failures itself (a string field that is not UTF-8, a message nested
// too deep), one line each on stderr, outside the structured log. Bytes a client chooses must
// not grow the log without bound, so those lines go through the structured log instead
// (event protobuf.log, text escaped), at most kProtobufLinesPerMinute a minute; the next line
// written says how many were suppressed.

#include <chrono>
#include <cstdint>

namespace ramguard::control {

inline constexpr std::uint64_t kProtobufLinesPerMinute = 10;

// Installs the handler for the whole process (once, before the first request is parsed).
void route_protobuf_log();

// The budget behind it, a pure function of the time: admits at most `per_minute` lines in
// each minute counted from the first line of that minute, and counts the rest.
class LinesPerMinute {
 public:
  explicit LinesPerMinute(std::uint64_t per_minute) : per_minute_(per_minute) {}
  // True when a line may be written now; `suppressed` is then set to the lines dropped since the
  // previous written one (0 when none).
  bool admit(std::chrono::steady_clock::time_point now, std::uint64_t& suppressed);

 private:
  std::uint64_t per_minute_;
  std::chrono::steady_clock::time_point window_start_{};
  std::uint64_t written_in_window_ = 0;
  std::uint64_t suppressed_ = 0;
};

}  // namespace ramguard::control
