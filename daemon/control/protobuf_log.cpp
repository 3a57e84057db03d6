#include "control/protobuf_log.hpp"

#include <google/protobuf/stubs/logging.h>

#include <mutex>
#include <string>

#include "common/log.hpp"
#include "ramguard/base/utf8.hpp"

namespace ramguard::control {
namespace {

std::mutex g_mutex;  // protobuf may log from any thread (the metrics server's among them)
LinesPerMinute g_budget{kProtobufLinesPerMinute};

const char* level_name(google::protobuf::LogLevel level) {
  switch (level) {
    case google::protobuf::LOGLEVEL_INFO:
      return "info";
    case google::protobuf::LOGLEVEL_WARNING:
      return "warning";
    case google::protobuf::LOGLEVEL_ERROR:
      return "error";
    default:
      return "fatal";
  }
}

void handle(google::protobuf::LogLevel level, const char* file, int line,
            const std::string& message) {
  std::uint64_t suppressed = 0;
  {
    std::lock_guard lock(g_mutex);
    if (!g_budget.admit(std::chrono::steady_clock::now(), suppressed)) return;
  }
  constexpr std::size_t kMaxMessageBytes = 512;
  log::warning("protobuf.log", {{"protobuf_level", level_name(level)},
                                {"source", std::string(file) + ":" + std::to_string(line)},
                                {"message", valid_utf8(message.substr(0, kMaxMessageBytes))},
                                {"suppressed", suppressed}});
}

}  // namespace

bool LinesPerMinute::admit(std::chrono::steady_clock::time_point now, std::uint64_t& suppressed) {
  if (written_in_window_ == 0 || now - window_start_ >= std::chrono::minutes(1)) {
    window_start_ = now;
    written_in_window_ = 0;
  }
  if (written_in_window_ >= per_minute_) {
    ++suppressed_;
    return false;
  }
  ++written_in_window_;
  suppressed = suppressed_;
  suppressed_ = 0;
  return true;
}

void route_protobuf_log() {
  google::protobuf::SetLogHandler(&handle);
}

}  // namespace ramguard::control
