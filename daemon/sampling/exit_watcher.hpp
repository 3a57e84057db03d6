#pragma once
// Notices a target's exit at once: a pidfd (pidfd_open through syscall) waited on by the
// io_context fires when the process ends, for children and non-children alike. The watcher
// never signals or reaps anyone: for the daemon's own children it peeks at the status with
// waitid(P_PIDFD, ..., WNOWAIT) and leaves the reaping to their owner.

#include <sys/types.h>

#include <asio/io_context.hpp>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>

#include "common/reading.hpp"
#include "common/result.hpp"
#include "sampling/exit_info.hpp"

namespace ramguard {

class ExitWatcher {
 public:
  using OnExit = std::function<void(ExitInfo)>;

  explicit ExitWatcher(asio::io_context& io, std::filesystem::path proc_root = "/proc",
                       std::filesystem::path cgroup_root = "/sys/fs/cgroup");
  ~ExitWatcher();
  ExitWatcher(const ExitWatcher&) = delete;
  ExitWatcher& operator=(const ExitWatcher&) = delete;

  // on_exit runs once, on the io_context, after the process has ended. Errors: no such
  // process, already watched, pidfd_open unavailable (Linux < 5.3) or not permitted.
  Status watch(pid_t pid, OnExit on_exit);
  // As above, and fails when PID no longer names this process (start time differs).
  Status watch(const TargetId& id, OnExit on_exit);
  // Stops watching; on_exit will not be called. Unknown PIDs are ignored.
  void cancel(pid_t pid);

  bool watching(pid_t pid) const { return entries_.count(pid) != 0; }
  std::size_t size() const { return entries_.size(); }

 private:
  struct Entry;
  void on_ready(const std::shared_ptr<Entry>& entry);

  asio::io_context& io_;
  std::filesystem::path proc_root_;
  std::filesystem::path cgroup_root_;
  std::map<pid_t, std::shared_ptr<Entry>> entries_;
};

}  // namespace ramguard
