#pragma once
// PIDs watched without a run (--watch): readings and the exact peak since first watched go to
// the target observers (metrics), the exit is logged. No marks, no verdicts: those need a run.

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>

#include "common/clock.hpp"
#include "ramguard/base/result.hpp"
#include "runs/observer.hpp"
#include "sampling/exit_watcher.hpp"
#include "sampling/sampler.hpp"

namespace ramguard {

class WatchList {
 public:
  // peak_refresh_ticks: ticks between status reads that keep the exact peak current.
  WatchList(Sampler& sampler, ExitWatcher& exits, const Clock& clock,
            std::uint32_t peak_refresh_ticks = 1);
  ~WatchList();
  WatchList(const WatchList&) = delete;
  WatchList& operator=(const WatchList&) = delete;

  void set_observer(TargetObserver* observer) { observer_ = observer; }
  void set_peak_refresh_ticks(std::uint32_t ticks) { peak_refresh_ticks_ = ticks; }
  // kCgroup watches the PID's own memory cgroup.
  Status add(pid_t pid, Scope scope = Scope::kProcess);
  std::size_t size() const { return targets_.size(); }
  bool watching(pid_t pid) const { return targets_.count(pid) != 0; }
  std::optional<std::uint64_t> peak_bytes(pid_t pid) const;

  // The series name of a watched PID.
  static std::string job_for_pid(pid_t pid) { return "pid-" + std::to_string(pid); }

 private:
  struct Target {
    pid_t pid = 0;
    std::string job;
    TargetKey key = 0;
    std::uint64_t peak_bytes = 0;
    bool exact = false;
    std::uint32_t ticks = 0;
    std::uint64_t rss_bytes = 0;  // the last reading's
    ExitWatcher::WatchId exit_watch = 0;
  };
  Status set_scope(TargetKey key, pid_t pid, Scope scope);
  void on_reading(pid_t pid, const Result<MemoryReading>& reading, const ReadTiming& timing);
  void maybe_log_summary(std::chrono::nanoseconds now);
  void on_exit(pid_t pid, const ExitInfo& info);

  Sampler& sampler_;
  ExitWatcher& exits_;
  const Clock& clock_;
  std::uint32_t peak_refresh_ticks_;
  TargetObserver* observer_ = nullptr;
  std::filesystem::path proc_root_ = "/proc";  // where the cgroup scope finds the PID's cgroup
  std::filesystem::path cgroup_root_ = "/sys/fs/cgroup";
  TargetObserver null_observer_;
  std::map<pid_t, Target> targets_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  // Each reading is logged at debug level; info gets one summary a minute at most, so a
  // thousand watched processes do not write 500 lines a second.
  std::chrono::nanoseconds last_summary_{clock_.now().monotonic};
  std::uint64_t readings_since_summary_ = 0;
};

}  // namespace ramguard
