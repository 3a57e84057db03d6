#pragma once
// Notices a target's exit at once: a pidfd (pidfd_open through syscall) per PID, all in one
// epoll set that the io_context waits on, fires when the process ends, for children and
// non-children alike. The watcher never signals or reaps anyone. The exit status comes from
// waitid(P_PIDFD, ..., WNOWAIT) for the daemon's own children (the reaping is left to their owner)
// and from the kernel's proc connector for everyone else, where the daemon may listen to it (root;
// see proc_events.hpp).
//
// Several owners may watch one PID (a run and a --watch of the same process): each watch has
// its own id and callback, and cancelling one leaves the others in place.

#include <sys/types.h>

#include <asio/io_context.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "model/reading.hpp"
#include "ramguard/base/result.hpp"
#include "sampling/exit_info.hpp"

namespace ramguard {

class ProcEvents;

struct ExitWatcherOptions {
  std::filesystem::path proc_root = "/proc";
  std::filesystem::path cgroup_root = "/sys/fs/cgroup";
  bool proc_connector = true;  // listen for non-children's exit statuses when permitted
  // The connector's message may be queued just after the pidfd wakes: how long to wait for it.
  std::chrono::milliseconds status_wait{50};
};

class ExitWatcher {
 public:
  using OnExit = std::function<void(ExitInfo)>;
  using WatchId = std::uint64_t;  // never 0

  explicit ExitWatcher(asio::io_context& io, std::filesystem::path proc_root = "/proc",
                       std::filesystem::path cgroup_root = "/sys/fs/cgroup");
  ExitWatcher(asio::io_context& io, ExitWatcherOptions options);
  ~ExitWatcher();
  ExitWatcher(const ExitWatcher&) = delete;
  ExitWatcher& operator=(const ExitWatcher&) = delete;

  // on_exit runs once, on the io_context, after the process has ended. Errors: no such
  // process, pidfd_open unavailable (Linux < 5.3) or not permitted, no epoll set.
  Result<WatchId> watch(pid_t pid, OnExit on_exit);
  // As above, and fails when PID no longer names this process (start time differs).
  Result<WatchId> watch(const TargetId& id, OnExit on_exit);
  // Stops this one watch: its on_exit will not be called. Unknown or spent ids are ignored.
  void cancel(WatchId id);

  bool watching(pid_t pid) const { return entries_.count(pid) != 0; }
  std::size_t size() const { return entries_.size(); }  // PIDs watched
  std::size_t watches(pid_t pid) const;                 // owners of one PID

  // Whether exit statuses of non-children can be told, and why not when they cannot.
  bool knows_non_child_status() const { return proc_events_ != nullptr; }
  const std::string& non_child_status_problem() const { return proc_events_problem_; }
  // The proc connector, when it could be opened (the tree scope follows forks through it).
  ProcEvents* proc_events() { return proc_events_.get(); }

 private:
  struct Entry;
  void wait_for_exits();
  void read_exits();
  void read_evidence(Entry& entry);
  void on_ready(const std::shared_ptr<Entry>& entry);
  void on_status(pid_t pid, int wait_status);
  void complete(const std::shared_ptr<Entry>& entry, ExitInfo info);
  void erase(std::map<pid_t, std::shared_ptr<Entry>>::iterator it);

  asio::io_context& io_;
  ExitWatcherOptions options_;
  std::unique_ptr<ProcEvents> proc_events_;
  std::string proc_events_problem_;
  asio::posix::stream_descriptor epoll_;  // the pidfds' epoll set
  std::string epoll_problem_;
  int waits_pending_ = 0;  // async_waits on epoll_ not yet completed
  std::map<pid_t, std::shared_ptr<Entry>> entries_;
  std::map<WatchId, pid_t> owners_;  // live watch ids, until cancelled or called
  WatchId next_id_ = 1;
  std::uint32_t next_serial_ = 1;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace ramguard
