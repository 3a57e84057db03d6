#pragma once
// Structured log lines in logfmt, one event per line on stderr:
//   ts=2026-11-30T03:00:00.123Z level=warning event=verdict.growth_warning job=vit round=2 ...
// Events are stable dotted names; values with spaces or quotes are quoted.

#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace ramguard::log {

enum class Level { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

struct Field {
  Field(std::string_view k, std::string_view v) : key(k), value(v) {}
  Field(std::string_view k, const std::string& v) : key(k), value(v) {}
  Field(std::string_view k, const char* v) : key(k), value(v) {}
  Field(std::string_view k, bool v) : key(k), value(v ? "true" : "false") {}
  Field(std::string_view k, double v);
  template <typename Int>
  requires std::is_integral_v<Int> Field(std::string_view k, Int v)
      : key(k), value(std::to_string(v)) {}
  std::string_view key;
  std::string value;
};

void set_level(Level level);
Level level();
const char* level_name(Level level);  // "debug", "info", "warning", "error"
// Tests capture lines instead of writing to stderr.
void set_sink(void (*sink)(const std::string& line));

void write(Level level, std::string_view event, std::initializer_list<Field> fields);

inline void debug(std::string_view event, std::initializer_list<Field> fields = {}) {
  write(Level::kDebug, event, fields);
}
inline void info(std::string_view event, std::initializer_list<Field> fields = {}) {
  write(Level::kInfo, event, fields);
}
inline void warning(std::string_view event, std::initializer_list<Field> fields = {}) {
  write(Level::kWarning, event, fields);
}
inline void error(std::string_view event, std::initializer_list<Field> fields = {}) {
  write(Level::kError, event, fields);
}

// Lines a client's request causes are charged to that client: while a PeerScope lives on this
// thread, every line written on it takes a token from the peer's bucket (kPeerBurstLines at
// once, kPeerLinesPerSecond after that), whatever its level. Past that the line is dropped and
// counted; the peer's next written line is preceded by one saying how many were dropped. One
// user's many connections and processes share one bucket (the key is the UID: a PID is free
// to make), so no socket user can flood the log, and the lines of the others still come.
inline constexpr double kPeerBurstLines = 20;
inline constexpr double kPeerLinesPerSecond = 2;

class PeerScope {
 public:
  // `key`: the peer's UID (or any stable number for peers without one); `name` is written in
  // the line that reports drops. `limited` false: the operator (root, a TCP client with the
  // token), whose lines are not limited: a root launcher may start every job's run.
  PeerScope(std::uint64_t key, std::string_view name, bool limited = true);
  ~PeerScope();
  PeerScope(const PeerScope&) = delete;
  PeerScope& operator=(const PeerScope&) = delete;

 private:
  const PeerScope* outer_;

 public:
  const std::uint64_t key;
  const std::string_view name;
};

// Lines dropped by the per-peer limit since the start (ramguard_log_lines_suppressed_total).
std::uint64_t lines_suppressed_total();
// Forget every peer's bucket (tests).
void reset_peer_buckets();

// The logfmt line without timestamp, for tests.
std::string format_line(Level level, std::string_view event, std::initializer_list<Field> fields);

}  // namespace ramguard::log
