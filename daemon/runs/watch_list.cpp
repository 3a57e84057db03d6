#include "runs/watch_list.hpp"

#include <algorithm>

#include "common/log.hpp"
#include "procfs/cgroup_memory.hpp"

namespace ramguard {

WatchList::WatchList(Sampler& sampler, ExitWatcher& exits, const Clock& clock,
                     std::uint32_t peak_refresh_ticks)
    : sampler_(sampler), exits_(exits), clock_(clock), peak_refresh_ticks_(peak_refresh_ticks) {}

WatchList::~WatchList() {
  *alive_ = false;
  for (const auto& [pid, target] : targets_) {
    exits_.cancel(target.exit_watch);
    sampler_.remove(target.key);
  }
}

Status WatchList::set_scope(TargetKey key, pid_t pid, Scope scope) {
  if (scope != Scope::kCgroup) return sampler_.attach(key, scope);
  auto cgroup = open_memory_cgroup(proc_root_, cgroup_root_, pid);
  if (!cgroup) return cgroup.error();
  return sampler_.attach(key, scope, std::move(*cgroup));
}

std::optional<std::uint64_t> WatchList::peak_bytes(pid_t pid) const {
  auto it = targets_.find(pid);
  if (it == targets_.end()) return std::nullopt;
  return it->second.peak_bytes;
}

Status WatchList::add(pid_t pid, Scope scope) {
  if (targets_.count(pid) != 0) return Error{"PID " + std::to_string(pid) + " is already watched"};
  auto key =
      sampler_.add(pid, [this, pid, alive = alive_](const TargetId&, const Result<MemoryReading>& r,
                                                    const ReadTiming& timing) {
        if (*alive) on_reading(pid, r, timing);
      });
  if (!key) return key.error();
  if (auto scoped = set_scope(*key, pid, scope); !scoped) {
    sampler_.remove(*key);
    return scoped;
  }
  TargetObserver& observer = observer_ != nullptr ? *observer_ : null_observer_;
  Target target;
  target.pid = pid;
  target.job = job_for_pid(pid);
  target.key = *key;
  // Staggered by PID: a thousand targets watched at once do not all read status on one tick.
  target.ticks = static_cast<std::uint32_t>(pid);
  // The peak counts from now: reset the high-water mark, then read the current RSS.
  auto reset = sampler_.reset_hwm(*key);
  target.exact = reset.ok();
  if (!reset) {
    log::warning("watch.exact_peak_unavailable", {{"pid", pid}, {"reason", reset.error().message}});
  }
  if (auto first = sampler_.read_now(*key, true)) {
    target.peak_bytes = std::max(first->hwm_bytes, first->rss_bytes);
    observer.target_reading(TargetRef{target.job, target.job}, *first, target.peak_bytes,
                            target.exact, sampler_.read_timing(*key));
    observer.target_state(TargetRef{target.job, target.job}, true,
                          target.exact ? "" : "hwm_reset_denied");
    log::info("watch.start", {{"pid", pid},
                              {"job", target.job},
                              {"scope", scope_name(scope)},
                              {"rss_bytes", first->rss_bytes},
                              {"exact_peak", target.exact}});
  }
  if (const auto id = sampler_.target(*key)) {
    auto watched = exits_.watch(*id, [this, pid, alive = alive_](ExitInfo info) {
      if (*alive) on_exit(pid, info);
    });
    if (watched) target.exit_watch = *watched;
    if (!watched)
      log::warning("watch.exit_watch_unavailable",
                   {{"pid", pid}, {"reason", watched.error().message}});
  }
  targets_[pid] = target;
  return ok_status();
}

void WatchList::on_reading(pid_t pid, const Result<MemoryReading>& reading,
                           const ReadTiming& timing) {
  auto it = targets_.find(pid);
  if (it == targets_.end()) return;
  TargetObserver& observer = observer_ != nullptr ? *observer_ : null_observer_;
  Target& target = it->second;
  if (!reading) {
    // A process found gone is not "unreadable": its exit is on its way from the exit watcher.
    observer.target_state(TargetRef{target.job, target.job}, false,
                          reading.error().kind == ErrorKind::kNotFound ? "exited" : "unreadable");
    return;
  }
  target.peak_bytes = std::max(target.peak_bytes, reading->rss_bytes);
  bool exact_now = false;
  const bool refresh =
      target.exact && peak_refresh_ticks_ != 0 && ++target.ticks % peak_refresh_ticks_ == 0;
  if (refresh) {
    if (auto complete = sampler_.read_now(target.key, true)) {
      target.peak_bytes = std::max(target.peak_bytes, complete->hwm_bytes);
      exact_now = true;
    }
  }
  observer.target_reading(TargetRef{target.job, target.job}, *reading, target.peak_bytes,
                          target.exact && exact_now,
                          refresh ? sampler_.read_timing(target.key) : timing);
  target.rss_bytes = reading->rss_bytes;
  if (log::level() <= log::Level::kDebug) {  // no formatting cost at info
    log::debug("watch.reading", {{"pid", pid},
                                 {"rss_bytes", reading->rss_bytes},
                                 {"anon_bytes", reading->anon_bytes},
                                 {"file_bytes", reading->file_bytes},
                                 {"peak_bytes", target.peak_bytes}});
  }
  ++readings_since_summary_;
  maybe_log_summary(reading->at.monotonic);  // the reading's own time: no clock read per target
}

void WatchList::maybe_log_summary(std::chrono::nanoseconds now) {
  if (now - last_summary_ < std::chrono::minutes(1)) return;
  std::uint64_t total_rss = 0;
  const Target* largest = nullptr;
  for (const auto& [pid, target] : targets_) {
    total_rss += target.rss_bytes;
    if (largest == nullptr || target.rss_bytes > largest->rss_bytes) largest = &target;
  }
  log::info("watch.summary",
            {{"targets", targets_.size()},
             {"readings", readings_since_summary_},
             {"seconds", std::chrono::duration<double>(now - last_summary_).count()},
             {"total_rss_bytes", total_rss},
             {"largest_pid", largest != nullptr ? largest->pid : 0},
             {"largest_rss_bytes", largest != nullptr ? largest->rss_bytes : 0}});
  last_summary_ = now;
  readings_since_summary_ = 0;
}

void WatchList::on_exit(pid_t pid, const ExitInfo& info) {
  auto it = targets_.find(pid);
  if (it == targets_.end()) return;
  TargetObserver& observer = observer_ != nullptr ? *observer_ : null_observer_;
  log::warning("watch.exited",
               {{"pid", pid}, {"detail", info.detail}, {"peak_bytes", it->second.peak_bytes}});
  sampler_.remove(it->second.key);
  observer.target_state(TargetRef{it->second.job, it->second.job}, false, "exited");
  observer.target_retired(TargetRef{it->second.job, it->second.job}, clock_.now());
  targets_.erase(it);
}

}  // namespace ramguard
