#include "common/log.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "ramguard/base/utf8.hpp"

namespace ramguard::log {
namespace {

std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
std::atomic<void (*)(const std::string&)> g_sink{nullptr};
std::atomic<std::uint64_t> g_suppressed_total{0};
thread_local const PeerScope* t_scope = nullptr;

// A token bucket per peer key. Buckets that have refilled are forgotten when the map grows
// past kMaxBuckets, so the map is bounded by the peers that are being limited right now.
class PeerBuckets {
 public:
  // Whether a line may be written now; `dropped` gets the count dropped since the last one.
  bool admit(std::uint64_t key, std::uint64_t& dropped) {
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    if (buckets_.size() > kMaxBuckets) forget_full(now);
    auto [it, fresh] = buckets_.try_emplace(key, Bucket{kPeerBurstLines, now, 0});
    Bucket& b = it->second;
    if (!fresh) b.tokens = refilled(b, now);
    b.last = now;
    if (b.tokens < 1) {
      ++b.dropped;
      return false;
    }
    b.tokens -= 1;
    dropped = std::exchange(b.dropped, 0);
    return true;
  }

  void clear() {
    std::lock_guard lock(mutex_);
    buckets_.clear();
  }

 private:
  struct Bucket {
    double tokens;
    std::chrono::steady_clock::time_point last;
    std::uint64_t dropped;
  };
  static constexpr std::size_t kMaxBuckets = 1024;

  static double refilled(const Bucket& b, std::chrono::steady_clock::time_point now) {
    return std::min(
        kPeerBurstLines,
        b.tokens + std::chrono::duration<double>(now - b.last).count() * kPeerLinesPerSecond);
  }

  void forget_full(std::chrono::steady_clock::time_point now) {
    std::erase_if(buckets_, [&](const auto& entry) {
      return entry.second.dropped == 0 && refilled(entry.second, now) >= kPeerBurstLines;
    });
  }

  std::mutex mutex_;
  std::unordered_map<std::uint64_t, Bucket> buckets_;
};

PeerBuckets& peer_buckets() {
  static PeerBuckets buckets;  // never destroyed before a thread that still logs
  return buckets;
}

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

PeerScope::PeerScope(std::uint64_t k, std::string_view n, bool limited)
    : outer_(t_scope), key(k), name(n) {
  t_scope = limited ? this : nullptr;
}

PeerScope::~PeerScope() {
  t_scope = outer_;
}

std::uint64_t lines_suppressed_total() {
  return g_suppressed_total.load(std::memory_order_relaxed);
}

void reset_peer_buckets() {
  peer_buckets().clear();
}

void write(Level lvl, std::string_view event, std::initializer_list<Field> fields) {
  if (static_cast<int>(lvl) < g_level.load()) return;
  std::string line;
  if (const PeerScope* scope = t_scope) {
    std::uint64_t dropped = 0;
    if (!peer_buckets().admit(scope->key, dropped)) {
      g_suppressed_total.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (dropped != 0) {
      line = "ts=" + timestamp() + " " +
             format_line(Level::kWarning, "log.peer_lines_suppressed",
                         {{"peer", scope->name},
                          {"lines", dropped},
                          {"limit", std::to_string(static_cast<int>(kPeerBurstLines)) +
                                        " lines at once, then " +
                                        std::to_string(static_cast<int>(kPeerLinesPerSecond)) +
                                        " per second per user"}}) +
             "\n";
    }
  }
  line += "ts=" + timestamp() + " " + format_line(lvl, event, fields) + "\n";
  if (auto sink = g_sink.load()) {
    sink(line);
    return;
  }
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace ramguard::log
