#include "sampling/exit_watcher.hpp"

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio/posix/stream_descriptor.hpp>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <cerrno>
#include <optional>

#include "common/log.hpp"
#include "procfs/cgroup.hpp"
#include "procfs/proc_fs.hpp"
#include "procfs/unique_fd.hpp"
#include "sampling/proc_events.hpp"

#ifndef P_PIDFD
#define P_PIDFD 3  // glibc < 2.36 lacks the name; the kernel (5.4+) knows the value
#endif

namespace ramguard {

// One watched PID: one pidfd, however many owners.
struct ExitWatcher::Entry {
  Entry(asio::io_context& io, int fd) : pidfd(io, fd), status_timer(io) {}
  asio::posix::stream_descriptor pidfd;
  asio::steady_timer status_timer;  // the wait for the proc connector's message
  pid_t pid = 0;
  std::map<WatchId, OnExit> callbacks;
  OomEvidence oom;
  std::filesystem::path oom_file;
  bool awaiting_status = false;  // exited; the connector's message is not read yet
  bool done = false;             // completed or cancelled: a late completion must do nothing
};

namespace {

// The exit status of one of our own children, without reaping it; nullopt for non-children.
std::optional<ExitInfo> peek_child_status(int pidfd) {
  siginfo_t si{};
  const int rc = ::waitid(static_cast<idtype_t>(P_PIDFD), static_cast<id_t>(pidfd), &si,
                          WEXITED | WNOHANG | WNOWAIT);
  if (rc != 0 || si.si_pid == 0) return std::nullopt;
  ExitInfo info;
  info.status_known = true;
  if (si.si_code == CLD_EXITED) {
    info.exit_code = si.si_status;
  } else {
    info.signal = si.si_status;
    info.core_dumped = si.si_code == CLD_DUMPED;
  }
  return info;
}

}  // namespace

ExitWatcher::ExitWatcher(asio::io_context& io, std::filesystem::path proc_root,
                         std::filesystem::path cgroup_root)
    : ExitWatcher(io, ExitWatcherOptions{.proc_root = std::move(proc_root),
                                         .cgroup_root = std::move(cgroup_root)}) {}

ExitWatcher::ExitWatcher(asio::io_context& io, ExitWatcherOptions options)
    : io_(io), options_(std::move(options)) {
  if (!options_.proc_connector) {
    proc_events_problem_ = "the proc connector is switched off";
    return;
  }
  auto opened = ProcEvents::open(io_);
  if (!opened) {
    proc_events_problem_ = opened.error().message;
    log::warning(
        "exit.non_child_status_unavailable",
        {{"reason", proc_events_problem_},
         {"effect", "exit code and signal of processes not started by ramguardd are unknown"}});
    return;
  }
  proc_events_ = std::move(*opened);
  proc_events_->set_on_status([this](pid_t pid, int wait_status) { on_status(pid, wait_status); });
  log::debug("exit.non_child_status_available", {{"source", "proc connector"}});
}

ExitWatcher::~ExitWatcher() {
  *alive_ = false;
  for (auto& [pid, entry] : entries_) {
    entry->done = true;
    entry->status_timer.cancel();
    asio::error_code ignored;
    entry->pidfd.close(ignored);
  }
}

std::size_t ExitWatcher::watches(pid_t pid) const {
  auto it = entries_.find(pid);
  return it == entries_.end() ? 0 : it->second->callbacks.size();
}

Result<ExitWatcher::WatchId> ExitWatcher::watch(pid_t pid, OnExit on_exit) {
  const std::string who = "cannot watch PID " + std::to_string(pid) + " for exit";
  if (pid <= 0) return Error{who + ": not a valid process id"};
  const WatchId id = next_id_++;
  if (auto it = entries_.find(pid); it != entries_.end()) {  // another owner: share the pidfd
    it->second->callbacks[id] = std::move(on_exit);
    owners_[id] = pid;
    return id;
  }
  UniqueFd fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!fd.valid()) {
    const int err = errno;
    if (err == ENOSYS) return Error{who + ": pidfd_open is not available (needs Linux 5.3+)"};
    if (err == ESRCH) return Error{who + ": no such process"};
    return Error{who + ": pidfd_open: " + errno_text(err)};
  }
  auto entry = std::make_shared<Entry>(io_, fd.release());
  entry->pid = pid;
  entry->callbacks[id] = std::move(on_exit);
  // The cgroup must be found now: after the exit /proc/PID/cgroup is gone.
  if (auto file = find_oom_counter(options_.proc_root, pid, options_.cgroup_root); file) {
    entry->oom_file = *file;
    entry->oom.cgroup_file = file->string();
    if (auto n = read_oom_kill_count(*file); n) entry->oom.before = *n;
  } else {
    entry->oom.problem = file.error().message;
  }
  if (proc_events_) proc_events_->keep(pid);
  entries_[pid] = entry;
  owners_[id] = pid;
  entry->pidfd.async_wait(asio::posix::stream_descriptor::wait_read,
                          [this, entry](const asio::error_code& ec) {
                            if (entry->done || ec) return;  // cancelled, or watcher gone
                            on_ready(entry);
                          });
  return id;
}

Result<ExitWatcher::WatchId> ExitWatcher::watch(const TargetId& target, OnExit on_exit) {
  auto id = watch(target.pid, std::move(on_exit));
  if (!id) return id;
  // The pidfd is open; if PID still names the same start time, it is the target's.
  auto now = ProcFs(options_.proc_root).identify(target.pid);
  if (!now || now->start_time_ticks != target.start_time_ticks) {
    cancel(*id);
    return Error{"cannot watch PID " + std::to_string(target.pid) +
                 " for exit: " + (now ? "the PID now names another process" : now.error().message)};
  }
  return id;
}

void ExitWatcher::cancel(WatchId id) {
  auto owner = owners_.find(id);
  if (owner == owners_.end()) return;
  const pid_t pid = owner->second;
  owners_.erase(owner);
  auto it = entries_.find(pid);
  if (it == entries_.end()) return;
  Entry& entry = *it->second;
  entry.callbacks.erase(id);
  if (!entry.callbacks.empty()) return;  // other owners still watch
  entry.done = true;
  entry.status_timer.cancel();
  asio::error_code ignored;
  entry.pidfd.close(ignored);
  entries_.erase(it);
  if (proc_events_) proc_events_->forget(pid);
}

void ExitWatcher::on_ready(const std::shared_ptr<Entry>& entry) {
  if (auto child = peek_child_status(entry->pidfd.native_handle())) {
    complete(entry, *child);
    return;
  }
  if (!proc_events_) {
    complete(entry, ExitInfo{});
    return;
  }
  if (auto status = proc_events_->status(entry->pid)) {
    complete(entry, exit_info_from_wait_status(*status));
    return;
  }
  // The exit is certain, its message not read yet: wait briefly, never blocking the loop.
  entry->awaiting_status = true;
  entry->status_timer.expires_after(options_.status_wait);
  entry->status_timer.async_wait([this, entry, alive = alive_](const asio::error_code& ec) {
    if (!*alive || ec || entry->done) return;
    log::debug("exit.status_not_received",
               {{"pid", entry->pid}, {"waited_ms", options_.status_wait.count()}});
    complete(entry, ExitInfo{});
  });
}

// From ProcEvents, possibly inside another watch() call: the completion is posted, so owners'
// callbacks always run from the io_context, never inside a call into the watcher.
void ExitWatcher::on_status(pid_t pid, int wait_status) {
  auto it = entries_.find(pid);
  if (it == entries_.end() || !it->second->awaiting_status) return;
  auto entry = it->second;
  entry->awaiting_status = false;
  entry->status_timer.cancel();
  asio::post(io_, [this, entry, wait_status, alive = alive_] {
    if (*alive && !entry->done) complete(entry, exit_info_from_wait_status(wait_status));
  });
}

void ExitWatcher::complete(const std::shared_ptr<Entry>& entry, ExitInfo info) {
  entry->done = true;
  entry->awaiting_status = false;
  entry->status_timer.cancel();
  if (entry->oom.before) {
    if (auto n = read_oom_kill_count(entry->oom_file); n) {
      entry->oom.after = *n;
    } else {
      entry->oom.problem = n.error().message;
    }
  }
  describe_exit(info, entry->pid, entry->oom);
  asio::error_code ignored;
  entry->pidfd.close(ignored);
  auto it = entries_.find(entry->pid);
  if (it != entries_.end() && it->second == entry) {
    entries_.erase(it);
    if (proc_events_) proc_events_->forget(entry->pid);
  }
  // Last: a callback may watch or cancel other PIDs, this PID again, or a sibling's watch
  // (which is then not called).
  auto callbacks = std::move(entry->callbacks);
  for (auto& [id, on_exit] : callbacks) {
    if (owners_.erase(id) == 0) continue;
    if (on_exit) on_exit(info);
  }
}

}  // namespace ramguard
