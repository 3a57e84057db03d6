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

// The logfmt line without timestamp, for tests.
std::string format_line(Level level, std::string_view event, std::initializer_list<Field> fields);

}  // namespace ramguard::log
