#pragma once
// PIDs watched without a run (--watch): readings and the exact peak since first watched go to
// the metrics, the exit is logged. No marks, no verdicts: those need a run.

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>

#include "common/clock.hpp"
#include "common/result.hpp"
#include "runs/run_registry.hpp"
#include "sampling/exit_watcher.hpp"
#include "sampling/sampler.hpp"

namespace ramguard {

class MetricsExporter;

class RunRegistry::WatchList {
 public:
  WatchList(Sampler& sampler, ExitWatcher& exits, const Clock& clock);
  ~WatchList();
  void set_metrics(MetricsExporter* metrics) { metrics_ = metrics; }
  Status add(pid_t pid);
  std::size_t size() const { return targets_.size(); }

 private:
  struct Target {
    pid_t pid = 0;
    std::string job;
    TargetKey key = 0;
    std::uint64_t peak_bytes = 0;
    bool exact = false;
    std::uint32_t ticks = 0;
    ExitWatcher::WatchId exit_watch = 0;
  };
  void on_reading(pid_t pid, const Result<MemoryReading>& reading);
  void on_exit(pid_t pid, const ExitInfo& info);

  Sampler& sampler_;
  ExitWatcher& exits_;
  const Clock& clock_;
  MetricsExporter* metrics_ = nullptr;
  std::map<pid_t, Target> targets_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace ramguard
