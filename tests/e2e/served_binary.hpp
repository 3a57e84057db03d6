#pragma once
// A server the e2e tests run (Debian's prometheus, prometheus-alertmanager): started on a
// loopback port with its output in a log file, ready when GET /-/ready answers 200, stopped
// with SIGTERM and, after 5 s, SIGKILL.

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace ramguard::testing {

class ServedBinary {
 public:
  // Runs BINARY with ARGS, stdout and stderr to LOG_PATH, and waits up to 30 s for it to be
  // ready on PORT. Throws std::runtime_error naming BINARY and quoting its log.
  ServedBinary(std::string binary, const std::vector<std::string>& args,
               std::filesystem::path log_path, std::uint16_t port);
  ~ServedBinary() { stop(); }
  ServedBinary(const ServedBinary&) = delete;
  ServedBinary& operator=(const ServedBinary&) = delete;

  // Reaped when it returns. Idempotent.
  void stop();
  std::string log() const;

 private:
  std::string binary_;
  std::filesystem::path log_path_;
  pid_t pid_ = -1;
};

}  // namespace ramguard::testing
