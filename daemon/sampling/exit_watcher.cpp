#include "sampling/exit_watcher.hpp"

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio/posix/stream_descriptor.hpp>
#include <cerrno>
#include <optional>

#include "procfs/cgroup.hpp"
#include "procfs/proc_fs.hpp"
#include "procfs/unique_fd.hpp"

#ifndef P_PIDFD
#define P_PIDFD 3  // glibc < 2.36 lacks the name; the kernel (5.4+) knows the value
#endif

namespace ramguard {

struct ExitWatcher::Entry {
  Entry(asio::io_context& io, int fd) : pidfd(io, fd) {}
  asio::posix::stream_descriptor pidfd;
  pid_t pid = 0;
  OnExit on_exit;
  OomEvidence oom;
  std::filesystem::path oom_file;
  bool done = false;  // fired or cancelled: a late completion must do nothing
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
    : io_(io), proc_root_(std::move(proc_root)), cgroup_root_(std::move(cgroup_root)) {}

ExitWatcher::~ExitWatcher() {
  for (auto& [pid, entry] : entries_) {
    entry->done = true;
    asio::error_code ignored;
    entry->pidfd.close(ignored);
  }
}

Status ExitWatcher::watch(pid_t pid, OnExit on_exit) {
  const std::string who = "cannot watch PID " + std::to_string(pid) + " for exit";
  if (pid <= 0) return Error{who + ": not a valid process id"};
  if (watching(pid)) return Error{who + ": already watched"};
  UniqueFd fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!fd.valid()) {
    const int err = errno;
    if (err == ENOSYS) return Error{who + ": pidfd_open is not available (needs Linux 5.3+)"};
    if (err == ESRCH) return Error{who + ": no such process"};
    return Error{who + ": pidfd_open: " + errno_text(err)};
  }
  auto entry = std::make_shared<Entry>(io_, fd.release());
  entry->pid = pid;
  entry->on_exit = std::move(on_exit);
  // The cgroup must be found now: after the exit /proc/PID/cgroup is gone.
  if (auto file = find_oom_counter(proc_root_, pid, cgroup_root_); file) {
    entry->oom_file = *file;
    entry->oom.cgroup_file = file->string();
    if (auto n = read_oom_kill_count(*file); n) entry->oom.before = *n;
  } else {
    entry->oom.problem = file.error().message;
  }
  entries_[pid] = entry;
  entry->pidfd.async_wait(asio::posix::stream_descriptor::wait_read,
                          [this, entry](const asio::error_code& ec) {
                            if (entry->done || ec) return;  // cancelled, or watcher gone
                            on_ready(entry);
                          });
  return ok_status();
}

Status ExitWatcher::watch(const TargetId& id, OnExit on_exit) {
  if (auto s = watch(id.pid, std::move(on_exit)); !s) return s;
  // The pidfd is open; if PID still names the same start time, it is the target's.
  auto now = ProcFs(proc_root_).identify(id.pid);
  if (!now || now->start_time_ticks != id.start_time_ticks) {
    cancel(id.pid);
    return Error{"cannot watch PID " + std::to_string(id.pid) +
                 " for exit: " + (now ? "the PID now names another process" : now.error().message)};
  }
  return ok_status();
}

void ExitWatcher::cancel(pid_t pid) {
  auto it = entries_.find(pid);
  if (it == entries_.end()) return;
  it->second->done = true;
  asio::error_code ignored;
  it->second->pidfd.close(ignored);
  entries_.erase(it);
}

void ExitWatcher::on_ready(const std::shared_ptr<Entry>& entry) {
  entry->done = true;
  ExitInfo info = peek_child_status(entry->pidfd.native_handle()).value_or(ExitInfo{});
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
  if (it != entries_.end() && it->second == entry) entries_.erase(it);
  // Last: the callback may watch or cancel other PIDs, or even this PID again.
  if (entry->on_exit) entry->on_exit(std::move(info));
}

}  // namespace ramguard
