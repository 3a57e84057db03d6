#pragma once
// The run registry: every run from start to verdicts. Control requests (start, mark, end) and
// sampler readings come in; readings, phase peaks, boundary floors and verdicts go to the
// ledger, the store and the metrics. Runs on the daemon's single io_context thread.
//
// Exact peaks: at every mark the registry reads /proc/PID/status, folds its VmHWM (the peak
// since the previous reset) into every open phase and the run, then resets the high-water
// mark. So each phase's peak is exact even with nested phases, and periodic statm readings
// stay the cheap path.

#include <sys/types.h>

#include <asio/io_context.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "admission/admission.hpp"
#include "common/clock.hpp"
#include "common/result.hpp"
#include "runs/run.hpp"
#include "sampling/exit_watcher.hpp"
#include "sampling/sampler.hpp"
#include "verdicts/params.hpp"

namespace ramguard {

class Store;
class MetricsExporter;

struct RegistryParams {
  DetectorParams detectors;
  std::chrono::nanoseconds settle = std::chrono::seconds(3);
  std::uint32_t max_runs = 256;
  std::uint32_t max_marks_per_run = 100000;
  SeriesLimits series;
  std::chrono::nanoseconds ended_retention = std::chrono::minutes(15);
  std::uint32_t peak_refresh_ticks =
      1;  // status read (VmHWM, ~6 us) for the exact peak between marks
  std::uint32_t store_flush_ticks = 5;  // progress and a downsampled sample to the store
};

// Who asks, as the control server learned it.
struct Caller {
  pid_t pid = 0;
  uid_t uid = 0;
  bool privileged = false;  // root, or a TCP peer with the token
};

struct StartRunInput {
  pid_t pid = 0;  // 0: the caller
  std::string job;
  std::map<std::string, std::string> labels;
  std::uint64_t model_bytes = 0;
  std::uint32_t declared_rounds = 0;
  std::uint32_t hosts = 0;
  std::string reservation_id;
  bool end_on_exit = false;  // the run ends with its process, as under `ramguard exec`
};

struct MarkInput {
  std::string run_id;
  MarkKind kind = MarkKind::kPhaseBegin;
  std::string phase;
  std::uint32_t round = 0;  // 0: counted by the registry
  std::optional<AllocatorFacts> allocator;
  std::optional<GcFacts> gc;
};

struct MarkOutcome {
  MarkRecord mark;
  std::uint64_t phase_peak_bytes = 0;
  double phase_duration_seconds = 0;
  bool peak_exact = false;
  bool stored = false;
  std::vector<Verdict> verdicts;
};

struct EndOutcome {
  MemoryReading reading;
  std::uint64_t peak_bytes = 0;
  bool stored = false;
  std::vector<Verdict> verdicts;
};

class RunRegistry {
 public:
  RunRegistry(asio::io_context& io, const Clock& clock, Sampler& sampler, ExitWatcher& exits,
              Admission& admission, RegistryParams params);
  ~RunRegistry();
  RunRegistry(const RunRegistry&) = delete;
  RunRegistry& operator=(const RunRegistry&) = delete;

  // Either may be null: the registry keeps guarding without them.
  void set_store(Store* store);
  void set_metrics(MetricsExporter* metrics);
  void set_params(const RegistryParams& params);
  const RegistryParams& params() const { return params_; }
  Store* store() const { return store_; }

  Result<const RunLedger*> start(const StartRunInput& input, const Caller& caller);
  Result<MarkOutcome> mark(const MarkInput& input, const Caller& caller);
  Result<EndOutcome> end(const std::string& run_id, const Caller& caller);

  // Watches a PID without a run (--watch): readings, exact peak since first watched, exit.
  Status watch(pid_t pid);

  // Restart recovery: resumes active runs whose process is alive, ends the others `lost`,
  // restores reservations. Call once after set_store.
  void recover();
  // Periodic upkeep: lease expiry, forgetting ended runs, metrics retention, own cost.
  void housekeeping();
  // Called after the admission state changed (admit, release): keeps the store in step.
  void sync_reservations();

  const Run* find(const std::string& run_id) const;
  std::vector<const Run*> runs() const;
  std::size_t active_runs() const;

  // Verdicts emitted so far (all runs), for tests and logs.
  std::uint64_t verdicts_emitted() const { return verdicts_emitted_; }

 private:
  Run* find_mut(const std::string& run_id);
  Result<Run*> find_for_change(const std::string& run_id, const Caller& caller, const char* what);
  void on_reading(const std::string& run_id, const Result<MemoryReading>& reading);
  void on_exit(const std::string& run_id, const ExitInfo& info);
  void end_with_process(Run& run, const ExitInfo& info, const Instant& now);
  void observe(Run& run, const MemoryReading& reading);
  void fold_hwm(Run& run, const MemoryReading& complete);
  Result<MemoryReading> mark_reading(Run& run, bool reset);
  void refresh_peak(Run& run);
  void check_budget(Run& run);
  void check_runaway(Run& run);
  void check_release(Run& run, const Instant& now);
  void settle_boundary(const std::string& run_id, std::size_t boundary_index);
  void evaluate_growth(Run& run);
  void evaluate_gaps(Run& run, std::vector<Verdict>& out);
  void finish(Run& run, RunState state, const Instant& at);
  void stop_sampling(Run& run);
  void emit(Run& run, Verdict verdict, std::vector<Verdict>* out = nullptr);
  void flush_progress(Run& run);
  // True when stored; false when the store is unavailable or the write failed (logged).
  bool store_write(Run& run, const char* what, const std::function<Status()>& write);
  std::string new_run_id();

  asio::io_context& io_;
  const Clock& clock_;
  Sampler& sampler_;
  ExitWatcher& exits_;
  Admission& admission_;
  RegistryParams params_;
  Store* store_ = nullptr;
  MetricsExporter* metrics_ = nullptr;
  std::map<std::string, std::unique_ptr<Run>> runs_;
  class WatchList;
  std::unique_ptr<WatchList> watches_;
  std::vector<std::string> stored_reservations_;
  std::uint64_t verdicts_emitted_ = 0;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
};

}  // namespace ramguard
