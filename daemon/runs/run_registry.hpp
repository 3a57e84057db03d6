#pragma once
// The run registry: thin orchestration around one RunMachine per run. It authorizes callers,
// connects each run to the sampler (periodic readings, mark-time reads, high-water resets) and
// the exit watcher, sets one alarm per run for the machine's next deadline (runs/alarm.hpp: a
// seam, so tests fire deadlines on a FakeClock), sums a tree's PSS on a worker after each
// round end, claims and releases reservations, and recovers runs after a restart. Decisions
// live in RunMachine; what happens is published to the observers main plugs in (store,
// metrics). Runs on the daemon's single io_context thread.

#include <sys/types.h>

#include <asio/io_context.hpp>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "admission/admission.hpp"
#include "common/clock.hpp"
#include "model/access.hpp"
#include "model/scope.hpp"
#include "ramguard/base/result.hpp"
#include "runs/alarm.hpp"
#include "runs/observer_set.hpp"
#include "runs/run_machine.hpp"
#include "runs/run_params.hpp"
#include "runs/run_source.hpp"
#include "sampling/census_placer.hpp"
#include "sampling/exit_watcher.hpp"
#include "sampling/pss_reader.hpp"
#include "sampling/sampler.hpp"

namespace ramguard {

struct StartRunInput {
  pid_t pid = 0;  // 0: the caller
  std::string job;
  std::map<std::string, std::string> labels;
  std::uint64_t model_bytes = 0;
  std::uint32_t declared_rounds = 0;
  std::uint32_t hosts = 0;
  std::string reservation_id;
  bool end_on_exit = false;  // the run ends with its process, as under `ramguard exec`
  Scope scope = Scope::kProcess;
  std::string cgroup_path;  // cgroup scope: a directory or /proc/PID/cgroup path; "": the PID's
};

class RunRegistry {
 public:
  // ALARMS: what sets the runs' deadlines, on CLOCK's time; it outlives the registry. Null: asio
  // timers on IO (the daemon's).
  RunRegistry(asio::io_context& io, const Clock& clock, Sampler& sampler, ExitWatcher& exits,
              Admission& admission, RunParams params, Alarms* alarms = nullptr);
  ~RunRegistry();
  RunRegistry(const RunRegistry&) = delete;
  RunRegistry& operator=(const RunRegistry&) = delete;

  // Observers (the store, the metrics exporter) see every event from then on.
  void add_observer(RunObserver* observer);
  void set_params(const RunParams& params);
  const RunParams& params() const { return params_; }
  bool stores_durably() const { return observers_.has_durable(); }

  Result<const RunLedger*> start(const StartRunInput& input, const Caller& caller);
  Result<MarkOutcome> mark(const MarkInput& input, const Caller& caller);
  // exit_max_rss_bytes: ramguard exec's ru_maxrss of the run's process, folded into the peak of
  // a run that ends with its process, also once it has ended (then nothing else changes).
  Result<EndOutcome> end(const std::string& run_id, const Caller& caller,
                         const std::string& failure = {},
                         std::optional<EndFacts> facts = std::nullopt,
                         std::uint64_t exit_max_rss_bytes = 0);

  // Restart recovery: resumes active runs whose process (same PID and start time) is alive,
  // ends the others `lost`, restores reservations. Call once, before serving requests.
  void recover(RunSource& source);
  // Periodic upkeep: lease expiry, forgetting ended runs after the retention.
  void housekeeping();
  // Called after the admission state changed (admit, release): observers get the new rows.
  void sync_reservations();

  const RunMachine* find(const std::string& run_id) const;
  // A ledger batch holding this run's writes was rolled back (group commit): its ledger is
  // incomplete, as after a failed write.
  void store_lost(const std::string& run_id);
  // The client's census with a round end (ROUND) or the run's end (at_end, before it ends):
  // its ranges placed against the run's process's mappings (PLACED: already placed, by
  // place_ahead), its gap against READING (the mark's; nullopt: the run's last) and the
  // allocator's free bytes, then kept by the run.
  Status add_census(const std::string& run_id, const Caller& caller, CensusRecord census,
                    const std::optional<MemoryReading>& reading,
                    std::optional<CensusPlacement> placed = std::nullopt);
  // Places RANGES in the active run's process's mappings on the placer's worker (maps and
  // pagemap: milliseconds per GB, which the loop does not wait for); DONE runs on the loop.
  // False, and DONE never runs, for a run that is not active here.
  bool place_ahead(const std::string& run_id, std::vector<CensusRange> ranges,
                   CensusPlacer::Done done);
  std::vector<const RunMachine*> runs() const;  // oldest first
  // The shared-memory objects the run's processes map (Sampler::shared_segments); an error
  // when the run is no longer sampled.
  Result<std::vector<SharedSegment>> shared_segments(const std::string& run_id) const;
  std::size_t active_runs() const;

 private:
  // What the registry keeps beside each machine: the I/O that connects it to its process.
  struct Entry {
    std::unique_ptr<RunMachine> machine;
    TargetKey key = 0;                       // 0: no longer sampled
    ExitWatcher::WatchId exit_watch = 0;     // 0: exit not watched (any more)
    std::unique_ptr<Alarm> deadline;         // made at the first deadline; gone with the entry
    std::optional<Instant> forget_at;        // ended runs leave memory (not the ledger) after this
    std::optional<std::uint64_t> oom_kills;  // cgroup scope: the counter at the last reading
  };
  // The cgroup scope: OOM kills in the cgroup since the last reading become a verdict.
  void check_oom_kills(Entry& entry);
  class Probe;
  Entry* find_entry(const std::string& run_id);
  Status make_room_for_a_run();
  Error refused(std::string_view cap, std::uint32_t owner_uid, Error error);
  Result<Entry*> find_for_change(const std::string& run_id, const Caller& caller, const char* what);
  Status connect(Entry& entry, const TargetId& target);
  // The cgroup scope: the memory cgroup to sample for PID (its own, or cgroup_path) attached to
  // the target; returns its directory.
  Result<std::string> attach_cgroup(TargetKey key, pid_t pid, const std::string& cgroup_path,
                                    const Caller& caller);
  // `budget: auto`: the run is judged against its cgroup's limit when that is below the budget.
  void apply_cgroup_budget(RunMachine& machine);
  void on_reading(const std::string& run_id, const Result<MemoryReading>& reading,
                  const ReadTiming& timing);
  // The wiring every run gets, started or recovered: its readings and its exit come back to
  // the registry by run id, and never after the registry is gone.
  ReadingSink reading_sink(const std::string& run_id);
  void watch_exit(Entry& entry, const TargetId& target);
  void on_exit(const std::string& run_id, const ExitInfo& info);
  void on_deadline(const std::string& run_id);
  // A tree-scope run's round end: its processes' PSS summed on the PSS worker (a page-table
  // walk each, 28 ms for a 6 GB process), kept with that boundary when it is back on the loop.
  void measure_tree_pss(const Entry& entry, std::uint32_t round);
  // READ_SECONDS: how long the sum took its worker thread (the run's read timing keeps it).
  void set_boundary_pss(const std::string& run_id, std::uint32_t round, std::uint64_t pss_bytes,
                        double read_seconds);
  void after_change(Entry& entry);
  void publish_counts();
  std::string new_run_id();

  const Clock& clock_;
  Sampler& sampler_;
  ExitWatcher& exits_;
  Admission& admission_;
  RunParams params_;
  std::unique_ptr<Alarms> own_alarms_;  // when none was given
  Alarms& alarms_;
  ObserverSet observers_;
  std::map<std::string, std::unique_ptr<Entry>> runs_;
  std::shared_ptr<bool> alive_ = std::make_shared<bool>(true);
  // Last: their workers stop first; what they post back checks alive_ as well.
  std::unique_ptr<PssReader> pss_;
  std::unique_ptr<CensusPlacer> placer_;
};

}  // namespace ramguard
