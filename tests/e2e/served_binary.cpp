#include "served_binary.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "harness.hpp"
#include "unit/metrics/scrape.hpp"

namespace ramguard::testing {

ServedBinary::ServedBinary(std::string binary, const std::vector<std::string>& args,
                           std::filesystem::path log_path, std::uint16_t port)
    : binary_(std::move(binary)), log_path_(std::move(log_path)) {
  std::vector<char*> argv{binary_.data()};
  std::vector<std::string> owned = args;  // execv's argv is not const
  for (std::string& a : owned) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_ = ::fork();
  if (pid_ < 0) throw std::runtime_error("fork failed");
  if (pid_ == 0) {
    const int log = ::open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0) {
      ::dup2(log, 1);
      ::dup2(log, 2);
    }
    ::execv(binary_.c_str(), argv.data());
    ::_exit(127);
  }
  const bool ready = eventually(
      [&] {
        int status = 0;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) {
          pid_ = -1;
          throw std::runtime_error(binary_ +
                                   " exited at start (not found, or bad config): " + log());
        }
        auto r = testkit::http_get(port, "/-/ready");
        return r.ok() && r->status == 200;
      },
      std::chrono::seconds(30), std::chrono::milliseconds(100));
  if (!ready) {
    const std::string message = binary_ + " not ready after 30 s: " + log();
    stop();
    throw std::runtime_error(message);
  }
}

void ServedBinary::stop() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGTERM);
  int status = 0;
  bool reaped = false;
  for (int i = 0; i < 100 && !reaped; ++i) {
    reaped = ::waitpid(pid_, &status, WNOHANG) == pid_;
    if (!reaped) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (!reaped) {
    ::kill(pid_, SIGKILL);  // still ours: not reaped, so the PID cannot have been reused
    ::waitpid(pid_, &status, 0);
  }
  pid_ = -1;
}

std::string ServedBinary::log() const {
  std::ifstream in(log_path_);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace ramguard::testing
