#include "sampling/exit_watcher.hpp"

#include <sys/epoll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <asio/post.hpp>
#include <asio/steady_timer.hpp>
#include <cerrno>
#include <optional>
#include <utility>
#include <vector>

#include "common/log.hpp"
#include "procfs/cgroup.hpp"
#include "procfs/proc_fs.hpp"
#include "procfs/unique_fd.hpp"
#include "sampling/proc_events.hpp"

#ifndef P_PIDFD
#define P_PIDFD 3  // glibc < 2.36 lacks the name; the kernel (5.4+) knows the value
#endif

namespace ramguard {

// One watched PID: one pidfd in the watcher's epoll set, however many owners. Kept small: a
// node may watch a thousand PIDs, and asio's per-descriptor state alone would be ~1 KiB each.
struct ExitWatcher::Entry {
  UniqueFd pidfd;
  std::unique_ptr<asio::steady_timer> status_timer;  // only while the exit status is awaited
  pid_t pid = 0;
  std::uint32_t serial = 0;  // tells this entry's epoll events from a former entry's of the PID
  std::vector<std::pair<WatchId, OnExit>> callbacks;
  OomEvidence oom;
  std::optional<CgroupPeak> cgroup_peak;  // read when the exit is first seen
  bool seen = false;                      // the exit has been seen: evidence read
  bool awaiting_status = false;           // exited; the connector's message is not read yet
  bool done = false;  // completed or cancelled: a late completion must do nothing

  void stop() {
    done = true;
    awaiting_status = false;
    if (status_timer) status_timer->cancel();
    pidfd.reset();  // the only reference to the pidfd's file: this also leaves the epoll set
  }
};

namespace {

std::uint64_t epoll_key(pid_t pid, std::uint32_t serial) {
  return (std::uint64_t{serial} << 32) | static_cast<std::uint32_t>(pid);
}

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
    : io_(io), options_(std::move(options)), epoll_(io) {
  if (const int fd = ::epoll_create1(EPOLL_CLOEXEC); fd >= 0) {
    epoll_.assign(fd);
  } else {
    epoll_problem_ = "epoll_create1: " + errno_text(errno);
  }
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
  for (auto& [pid, entry] : entries_) entry->stop();
  asio::error_code ignored;
  epoll_.close(ignored);
}

std::size_t ExitWatcher::watches(pid_t pid) const {
  auto it = entries_.find(pid);
  return it == entries_.end() ? 0 : it->second->callbacks.size();
}

Result<ExitWatcher::WatchId> ExitWatcher::watch(pid_t pid, OnExit on_exit) {
  const std::string who = "cannot watch PID " + std::to_string(pid) + " for exit";
  if (pid <= 0) return Error{who + ": not a valid process id"};
  if (!epoll_.is_open()) return Error{who + ": " + epoll_problem_};
  const WatchId id = next_id_++;
  if (auto it = entries_.find(pid); it != entries_.end()) {  // another owner: share the pidfd
    it->second->callbacks.emplace_back(id, std::move(on_exit));
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
  auto entry = std::make_shared<Entry>();
  entry->pid = pid;
  entry->serial = next_serial_++;
  // One-shot: an exited pidfd stays readable, and one wake-up is all an exit needs.
  epoll_event event{};
  event.events = EPOLLIN | EPOLLONESHOT;
  event.data.u64 = epoll_key(pid, entry->serial);
  if (::epoll_ctl(epoll_.native_handle(), EPOLL_CTL_ADD, fd.get(), &event) != 0) {
    return Error{who + ": epoll_ctl: " + errno_text(errno)};
  }
  entry->pidfd = std::move(fd);
  entry->callbacks.emplace_back(id, std::move(on_exit));
  // The cgroup must be found now: after the exit /proc/PID/cgroup is gone.
  if (auto file = find_oom_counter(options_.proc_root, pid, options_.cgroup_root); file) {
    entry->oom.cgroup_file = file->string();
    if (auto n = read_oom_kill_count(*file); n) entry->oom.before = *n;
  } else {
    entry->oom.problem = file.error().message;
  }
  if (proc_events_) proc_events_->keep(pid);
  entries_[pid] = std::move(entry);
  owners_[id] = pid;
  if (waits_pending_ == 0) wait_for_exits();
  return id;
}

void ExitWatcher::wait_for_exits() {
  ++waits_pending_;
  epoll_.async_wait(asio::posix::stream_descriptor::wait_read,
                    [this, alive = alive_](const asio::error_code& ec) {
                      if (!*alive) return;
                      --waits_pending_;
                      // Re-armed before reading, so an exit that lands meanwhile is not missed
                      // (asio waits for the next edge of the epoll descriptor).
                      if (!entries_.empty() && waits_pending_ == 0) wait_for_exits();
                      if (!ec) read_exits();
                    });
}

void ExitWatcher::read_exits() {
  constexpr int kBatch = 64;
  epoll_event events[kBatch];
  for (;;) {
    const int n = ::epoll_wait(epoll_.native_handle(), events, kBatch, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      log::error("exit.epoll_wait_failed", {{"error", errno_text(errno)}});
      return;
    }
    for (int i = 0; i < n; ++i) {
      const auto pid = static_cast<pid_t>(events[i].data.u64 & 0xffffffffU);
      const auto serial = static_cast<std::uint32_t>(events[i].data.u64 >> 32);
      // An earlier callback in this batch may have cancelled or replaced the watch.
      auto it = entries_.find(pid);
      if (it == entries_.end() || it->second->serial != serial || it->second->done) continue;
      on_ready(std::shared_ptr<Entry>(it->second));
    }
    if (n < kBatch) return;
  }
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
  std::erase_if(entry.callbacks, [id](const auto& callback) { return callback.first == id; });
  if (!entry.callbacks.empty()) return;  // other owners still watch
  entry.stop();
  erase(it);
}

void ExitWatcher::erase(std::map<pid_t, std::shared_ptr<Entry>>::iterator it) {
  if (proc_events_) proc_events_->forget(it->first);
  entries_.erase(it);
  if (entries_.empty()) {  // nothing to wait for: the loop may run out of work
    asio::error_code ignored;
    epoll_.cancel(ignored);
  }
}

// The cgroup's evidence is read the moment the pidfd says the process is gone, before its
// exit status is awaited: whoever ran the process may remove its cgroup right after the kill,
// and a removed cgroup's files cannot be read, not even through a descriptor kept open.
void ExitWatcher::read_evidence(Entry& entry) {
  if (entry.seen) return;
  entry.seen = true;
  if (!entry.oom.before) return;
  if (auto n = read_oom_kill_count(entry.oom.cgroup_file); n) {
    entry.oom.after = *n;
  } else {
    entry.oom.problem = n.error().message;
  }
  const auto dir = std::filesystem::path(entry.oom.cgroup_file).parent_path();
  if (auto peak = read_cgroup_peak(dir); peak) entry.cgroup_peak = *peak;
}

void ExitWatcher::on_ready(const std::shared_ptr<Entry>& entry) {
  read_evidence(*entry);
  if (auto child = peek_child_status(entry->pidfd.get())) {
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
  entry->status_timer = std::make_unique<asio::steady_timer>(io_, options_.status_wait);
  entry->status_timer->async_wait([this, entry, alive = alive_](const asio::error_code& ec) {
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
  entry->status_timer->cancel();
  asio::post(io_, [this, entry, wait_status, alive = alive_] {
    if (*alive && !entry->done) complete(entry, exit_info_from_wait_status(wait_status));
  });
}

void ExitWatcher::complete(const std::shared_ptr<Entry>& entry, ExitInfo info) {
  entry->stop();
  read_evidence(*entry);  // a completion without a wake-up (none today) still reads it
  describe_exit(info, entry->pid, entry->oom);
  if (entry->oom.before) {
    info.cgroup_dir = std::filesystem::path(entry->oom.cgroup_file).parent_path().string();
    info.cgroup_peak = entry->cgroup_peak;
  }
  auto it = entries_.find(entry->pid);
  if (it != entries_.end() && it->second == entry) erase(it);
  // Last: a callback may watch or cancel other PIDs, this PID again, or a sibling's watch
  // (which is then not called).
  auto callbacks = std::move(entry->callbacks);
  for (auto& [id, on_exit] : callbacks) {
    if (owners_.erase(id) == 0) continue;
    if (on_exit) on_exit(info);
  }
}

}  // namespace ramguard
