#pragma once
// A real child process that holds as much touched anonymous memory as it is told, for tests
// and benchmarks: tests/tools/memchild, fork+exec'ed with its stdin/stdout on pipes. memchild
// is never built with sanitizers (a sanitized child would add shadow memory to every reading),
// so sanitizer builds assert the same figures. After fork the child only calls dup2, close
// and execv, which is safe even when the parent has threads. Targets using this header call
// ramguard_uses_memchild() (tests/CMakeLists.txt) for RAMGUARD_MEMCHILD_PATH.

#include <fcntl.h>
#include <signal.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <string>

namespace ramguard::testing {

class TestChild {
 public:
  static constexpr std::uint64_t kMiB = 1024 * 1024;

  TestChild() {
    int to_child[2];
    int to_parent[2];
    if (::pipe2(to_child, O_CLOEXEC) != 0) return;
    if (::pipe2(to_parent, O_CLOEXEC) != 0) {
      ::close(to_child[0]);
      ::close(to_child[1]);
      return;
    }
    char path[] = RAMGUARD_MEMCHILD_PATH;
    char* argv[] = {path, nullptr};
    pid_ = ::fork();
    if (pid_ == 0) {
      // dup2 clears close-on-exec on the new descriptors; everything else closes at exec.
      if (::dup2(to_child[0], STDIN_FILENO) < 0 || ::dup2(to_parent[1], STDOUT_FILENO) < 0) {
        ::_exit(126);
      }
      ::execv(path, argv);
      ::_exit(127);
    }
    ::close(to_child[0]);
    ::close(to_parent[1]);
    cmd_fd_ = to_child[1];
    ack_fd_ = to_parent[0];
  }
  ~TestChild() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (cmd_fd_ >= 0) ::close(cmd_fd_);
    if (ack_fd_ >= 0) ::close(ack_fd_);
  }
  TestChild(const TestChild&) = delete;
  TestChild& operator=(const TestChild&) = delete;

  pid_t pid() const { return pid_; }

  // Holds exactly `bytes` of touched anonymous memory (rounded to pages); returns once done.
  bool hold(std::uint64_t bytes) {
    if (bytes == 0) {
      const bool ok = send(holding_ ? "free held" : "rss");
      holding_ = holding_ && !ok;
      return ok;
    }
    holding_ = send("alloc held " + std::to_string(bytes));
    return holding_;
  }
  // Maps `bytes` more, touches them, then unmaps them again: a spike the HWM remembers.
  bool spike(std::uint64_t bytes) { return send("spike " + std::to_string(bytes) + " 0"); }
  // Asks the child to exit with `code` (0..255); does not reap it.
  bool exit_with(int code) { return send("exit " + std::to_string(code), false); }

  // Reaps the child; returns the raw wait status.
  int reap() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    return status;
  }
  void mark_reaped() { reaped_ = true; }

 private:
  // One command line; with `wait_reply`, true once memchild answers "ok ...".
  bool send(const std::string& command, bool wait_reply = true) {
    const std::string line = command + "\n";
    if (cmd_fd_ < 0 ||
        ::write(cmd_fd_, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
      return false;
    }
    if (!wait_reply) return true;
    std::string reply;
    char c = 0;
    while (::read(ack_fd_, &c, 1) == 1 && c != '\n') reply += c;
    return c == '\n' && reply.rfind("ok ", 0) == 0;
  }

  pid_t pid_ = -1;
  int cmd_fd_ = -1;
  int ack_fd_ = -1;
  bool reaped_ = false;
  bool holding_ = false;
};

}  // namespace ramguard::testing
