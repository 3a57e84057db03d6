#pragma once
// A real child process that holds as much touched anonymous memory as it is told, for tests
// and benchmarks. After fork the child only makes system calls (mmap, memset, read, write),
// which is safe even when the parent has threads.

#include <signal.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace ramguard::testing {

class TestChild {
 public:
  static constexpr std::uint64_t kMiB = 1024 * 1024;

  TestChild() {
    int to_child[2];
    int to_parent[2];
    if (::pipe(to_child) != 0 || ::pipe(to_parent) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(to_child[1]);
      ::close(to_parent[0]);
      serve(to_child[0], to_parent[1]);
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
  bool hold(std::uint64_t bytes) { return send(kHold, bytes); }
  // Maps `bytes` more, touches them, then unmaps them again: a spike the HWM remembers.
  bool spike(std::uint64_t bytes) { return send(kSpike, bytes); }
  // Asks the child to exit with `code` (0..255); does not reap it.
  bool exit_with(int code) { return send(kExit, static_cast<std::uint64_t>(code), false); }

  // Reaps the child; returns the raw wait status.
  int reap() {
    int status = 0;
    ::waitpid(pid_, &status, 0);
    reaped_ = true;
    return status;
  }
  void mark_reaped() { reaped_ = true; }

 private:
  enum Op : std::uint64_t { kHold = 1, kSpike = 2, kExit = 3 };

  bool send(Op op, std::uint64_t arg, bool wait_ack = true) {
    const std::uint64_t cmd[2] = {op, arg};
    if (::write(cmd_fd_, cmd, sizeof cmd) != sizeof cmd) return false;
    if (!wait_ack) return true;
    char ack = 0;
    return ::read(ack_fd_, &ack, 1) == 1 && ack == 'k';
  }

  [[noreturn]] static void serve(int in, int out) {
    void* region = nullptr;
    std::size_t region_bytes = 0;
    for (;;) {
      std::uint64_t cmd[2] = {0, 0};
      if (::read(in, cmd, sizeof cmd) != sizeof cmd) ::_exit(0);
      if (cmd[0] == kExit) ::_exit(static_cast<int>(cmd[1]));
      if (cmd[0] == kSpike) {
        const auto n = static_cast<std::size_t>(cmd[1]);
        void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) {
          std::memset(p, 0x5a, n);
          ::munmap(p, n);
        }
      } else {
        if (region != nullptr) ::munmap(region, region_bytes);
        region = nullptr;
        region_bytes = static_cast<std::size_t>(cmd[1]);
        if (region_bytes > 0) {
          region = ::mmap(nullptr, region_bytes, PROT_READ | PROT_WRITE,
                          MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
          if (region == MAP_FAILED) ::_exit(90);
          std::memset(region, 0x5a, region_bytes);
        }
      }
      const char ack = 'k';
      if (::write(out, &ack, 1) != 1) ::_exit(0);
    }
  }

  pid_t pid_ = -1;
  int cmd_fd_ = -1;
  int ack_fd_ = -1;
  bool reaped_ = false;
};

}  // namespace ramguard::testing
