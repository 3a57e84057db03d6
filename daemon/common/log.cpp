#include "common/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>

#include "ramguard/base/utf8.hpp"

namespace ramguard::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
std::atomic<void (*)(const std::string&)> g_sink{nullptr};

bool has_control(std::string_view value) {
  for (std::size_t i = 0; i < value.size(); ++i) {
    if (control_length(value, i) != 0) return true;
  }
  return false;
}

// A client's text is one value of one line: bytes that are not UTF-8 and control characters
// (C0, DEL, C1) are written as visible escapes, never raw, so no value can start a line or
// send a terminal sequence to whoever tails the log.
void append_value(std::string& out, std::string_view raw) {
  const std::string value = valid_utf8(raw);
  const bool quote = value.empty() || value.find_first_of(" \t\"=\n\\") != std::string_view::npos ||
                     has_control(value);
  if (!quote) {
    out += value;
    return;
  }
  out += '"';
  for (std::size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (const std::size_t n = control_length(value, i); n != 0) {
      out += visible_control(value, i);
      i += n - 1;
    } else {
      out += c;
    }
  }
  out += '"';
}

std::string timestamp() {
  const auto now = std::chrono::system_clock::now();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch());
  const std::time_t secs = static_cast<std::time_t>(ms.count() / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms.count() % 1000));
  return buf;
}

}  // namespace

Field::Field(std::string_view k, double v) : key(k) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  value = buf;
}

void set_level(Level level) {
  g_level = static_cast<int>(level);
}
Level level() {
  return static_cast<Level>(g_level.load());
}

const char* level_name(Level level) {
  switch (level) {
    case Level::kDebug:
      return "debug";
    case Level::kInfo:
      return "info";
    case Level::kWarning:
      return "warning";
    case Level::kError:
      return "error";
  }
  return "info";
}

void set_sink(void (*sink)(const std::string&)) {
  g_sink = sink;
}

std::string format_line(Level lvl, std::string_view event, std::initializer_list<Field> fields) {
  std::string line = "level=";
  line += level_name(lvl);
  line += " event=";
  append_value(line, event);
  for (const Field& f : fields) {
    line += ' ';
    line += f.key;
    line += '=';
    append_value(line, f.value);
  }
  return line;
}

void write(Level lvl, std::string_view event, std::initializer_list<Field> fields) {
  if (static_cast<int>(lvl) < g_level.load()) return;
  std::string line = "ts=" + timestamp() + " " + format_line(lvl, event, fields) + "\n";
  if (auto sink = g_sink.load()) {
    sink(line);
    return;
  }
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace ramguard::log
