#include "runs/run_registry.hpp"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <random>

#include "common/log.hpp"
#include "procfs/cgroup_limit.hpp"
#include "procfs/maps.hpp"
#include "runs/mark_time.hpp"

namespace ramguard {

// The machine's window on its process, through the sampler.
class RunRegistry::Probe final : public TargetProbe {
 public:
  // TIMING: the sampler's, when the caller has it at hand (a periodic reading's sink).
  Probe(Sampler& sampler, TargetKey key, std::optional<ReadTiming> timing = std::nullopt)
      : sampler_(sampler), key_(key), timing_(timing) {}
  Result<MemoryReading> read(bool complete) override {
    timing_.reset();
    return sampler_.read_now(key_, complete);
  }
  Status reset_hwm() override { return sampler_.reset_hwm(key_); }
  std::vector<ProcessShare> tree_shares() override { return sampler_.tree_shares(key_); }
  ReadTiming read_timing() const override {
    return timing_ ? *timing_ : sampler_.read_timing(key_);
  }

 private:
  Sampler& sampler_;
  TargetKey key_;
  std::optional<ReadTiming> timing_;
};

RunRegistry::RunRegistry(asio::io_context& io, const Clock& clock, Sampler& sampler,
                         ExitWatcher& exits, Admission& admission, RunParams params, Alarms* alarms)
    : clock_(clock),
      sampler_(sampler),
      exits_(exits),
      admission_(admission),
      params_(std::move(params)),
      own_alarms_(alarms == nullptr ? std::make_unique<AsioAlarms>(io, clock) : nullptr),
      alarms_(alarms == nullptr ? *own_alarms_ : *alarms),
      pss_(std::make_unique<PssReader>(io.get_executor(), sampler.procfs().root())),
      placer_(std::make_unique<CensusPlacer>(io.get_executor(), sampler.procfs().root(),
                                             sampler.procfs().page_size_bytes())) {}

RunRegistry::~RunRegistry() {
  *alive_ = false;
  for (auto& [id, entry] : runs_) {
    if (entry->key != 0) sampler_.remove(entry->key);
    if (entry->exit_watch != 0) exits_.cancel(entry->exit_watch);
  }
}

void RunRegistry::add_observer(RunObserver* observer) {
  observers_.add(observer);
  publish_counts();
}

void RunRegistry::set_params(const RunParams& params) {
  params_ = params;
}

// Unique among the runs in memory; the random part makes a clash with a stored run unlikely
// (the store refuses a duplicate id, so a clash could not silently replace a run either).
std::string RunRegistry::new_run_id() {
  static std::mt19937_64 rng{std::random_device{}()};
  const std::time_t secs = static_cast<std::time_t>(
      std::chrono::duration_cast<std::chrono::seconds>(clock_.now().wall).count());
  std::tm tm{};
  gmtime_r(&secs, &tm);
  for (;;) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "r-%04d%02d%02d-%02d%02d%02d-%06x", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                  static_cast<unsigned>(rng() & 0xffffff));
    if (runs_.count(buf) == 0) return buf;
  }
}

std::size_t RunRegistry::active_runs() const {
  return static_cast<std::size_t>(std::count_if(
      runs_.begin(), runs_.end(), [](const auto& r) { return r.second->machine->active(); }));
}

const RunMachine* RunRegistry::find(const std::string& run_id) const {
  auto it = runs_.find(run_id);
  return it == runs_.end() ? nullptr : it->second->machine.get();
}

void RunRegistry::store_lost(const std::string& run_id) {
  if (Entry* entry = find_entry(run_id)) entry->machine->store_lost();
}

void RunRegistry::measure_tree_pss(const Entry& entry, std::uint32_t round) {
  if (entry.key == 0) return;
  std::vector<TargetId> processes = sampler_.tree_processes(entry.key);
  if (processes.empty()) return;  // not a tree
  pss_->sum(std::move(processes),
            [this, run_id = entry.machine->run_id(), round, alive = alive_](const PssSum& sum) {
              if (*alive) set_boundary_pss(run_id, round, sum.pss_bytes, sum.seconds);
            });
}

void RunRegistry::set_boundary_pss(const std::string& run_id, std::uint32_t round,
                                   std::uint64_t pss_bytes, double read_seconds) {
  Entry* entry = find_entry(run_id);
  if (entry == nullptr) return;
  entry->machine->set_boundary_pss(round, pss_bytes);
  if (entry->key != 0) sampler_.note_pss_read(entry->key, read_seconds);
}

RunRegistry::Entry* RunRegistry::find_entry(const std::string& run_id) {
  auto it = runs_.find(run_id);
  return it == runs_.end() ? nullptr : it->second.get();
}

std::vector<const RunMachine*> RunRegistry::runs() const {
  std::vector<const RunMachine*> out;
  for (const auto& [id, entry] : runs_) out.push_back(entry->machine.get());
  std::sort(out.begin(), out.end(), [](const RunMachine* a, const RunMachine* b) {
    return a->ledger().started.monotonic < b->ledger().started.monotonic;
  });
  return out;
}

Result<std::vector<SharedSegment>> RunRegistry::shared_segments(const std::string& run_id) const {
  auto it = runs_.find(run_id);
  if (it == runs_.end() || it->second->key == 0) {
    return Error{"run " + run_id + " is not sampled", ErrorKind::kNotFound};
  }
  return sampler_.shared_segments(it->second->key);
}

Result<RunRegistry::Entry*> RunRegistry::find_for_change(const std::string& run_id,
                                                         const Caller& caller, const char* what) {
  if (run_id.empty()) return Error{std::string(what) + " needs a run id"};
  Entry* entry = find_entry(run_id);
  if (entry == nullptr) return Error{"unknown run id '" + run_id + "'", ErrorKind::kNotFound};
  const RunLedger& ledger = entry->machine->ledger();
  if (!may_change(caller, ledger.info.owner_uid)) {
    return Error{"uid " + std::to_string(caller.uid) + " may not " + what + " run " + run_id +
                     ": its process is owned by uid " + std::to_string(ledger.info.owner_uid),
                 ErrorKind::kPermissionDenied};
  }
  if (!entry->machine->active()) {
    return Error{"run " + run_id + " has already " +
                     (ledger.state == RunState::kEnded ? std::string("ended")
                                                       : std::string(run_state_name(ledger.state))),
                 ErrorKind::kFailedPrecondition};
  }
  return entry;
}

void RunRegistry::apply_cgroup_budget(RunMachine& machine) {
  if (!params_.budget_from_cgroup) return;
  const RunLedger& ledger = machine.ledger();
  auto limit = process_cgroup_limit(params_.proc_root, ledger.info.target.pid, params_.cgroup_root);
  if (!limit || !limit->bytes) return;  // no memory cgroup, or no limit over it
  machine.set_cgroup_limit(*limit->bytes);
  if (*limit->bytes < params_.detectors.budget_bytes) {
    log::info("run.cgroup_budget", {{"run", ledger.info.run_id},
                                    {"limit_bytes", *limit->bytes},
                                    {"cgroup", limit->binding_dir.string()}});
  }
}

ReadingSink RunRegistry::reading_sink(const std::string& run_id) {
  return [this, run_id, alive = alive_](const TargetId&, const Result<MemoryReading>& r,
                                        const ReadTiming& timing) {
    if (*alive) on_reading(run_id, r, timing);
  };
}

void RunRegistry::watch_exit(Entry& entry, const TargetId& target) {
  const std::string run_id = entry.machine->run_id();
  auto watched = exits_.watch(target, [this, run_id, alive = alive_](ExitInfo exit) {
    if (*alive) on_exit(run_id, exit);
  });
  if (watched) {
    entry.exit_watch = *watched;
  } else {
    log::warning("run.exit_watch_unavailable",
                 {{"run", run_id}, {"reason", watched.error().message}});
  }
}

Result<std::string> RunRegistry::attach_cgroup(TargetKey key, pid_t pid,
                                               const std::string& cgroup_path,
                                               const Caller& caller) {
  // Anyone may guard their own process's cgroup; naming another cgroup is root's.
  if (!cgroup_path.empty() && !caller.privileged) {
    return Error{"only root may name a cgroup path; leave it empty to guard PID " +
                     std::to_string(pid) + "'s own memory cgroup",
                 ErrorKind::kPermissionDenied};
  }
  auto cgroup = open_memory_cgroup(params_.proc_root, params_.cgroup_root, pid, cgroup_path);
  if (!cgroup) return Error{cgroup.error().message, ErrorKind::kInvalidArgument};
  std::string dir = cgroup->dir().string();
  if (auto set = sampler_.attach(key, Scope::kCgroup, std::move(*cgroup)); !set) {
    return set.error();
  }
  return dir;
}

// A cap's refusal is logged (a request's line: limited per user, common/log.hpp) and counted.
Error RunRegistry::refused(std::string_view cap, std::uint32_t owner_uid, Error error) {
  log::warning("run.start_refused",
               {{"cap", cap}, {"owner_uid", owner_uid}, {"reason", error.message}});
  observers_.notify([&](RunObserver& o) { o.run_refused(cap, owner_uid); });
  return error;
}

Result<const RunLedger*> RunRegistry::start(const StartRunInput& input, const Caller& caller) {
  if (active_runs() >= params_.max_runs) {
    return refused("runs", caller.uid,
                   Error{"too many active runs (limit " + std::to_string(params_.max_runs) + ")",
                         ErrorKind::kResourceExhausted});
  }
  if (Status room = make_room_for_a_run(); !room) return room.error();
  const pid_t pid = input.pid != 0 ? input.pid : caller.pid;
  if (pid <= 0) return Error{"run start needs a pid (the caller's PID is unknown on TCP)"};
  const std::string run_id = new_run_id();
  auto key = sampler_.add(pid, reading_sink(run_id), run_id);
  if (!key) return Error{key.error().message, ErrorKind::kNotFound};
  const auto target = sampler_.target(*key);
  const std::uint32_t owner = sampler_.owner_uid(*key).value_or(0);
  auto drop = [&](Error e) -> Result<const RunLedger*> {
    sampler_.remove(*key);
    return e;
  };
  if (!may_change(caller, owner)) {
    return drop(Error{"uid " + std::to_string(caller.uid) + " may not start a run on PID " +
                          std::to_string(pid) + ": it is owned by uid " + std::to_string(owner),
                      ErrorKind::kPermissionDenied});
  }
  std::string cgroup_dir;
  if (input.scope == Scope::kCgroup) {
    auto attached = attach_cgroup(*key, pid, input.cgroup_path, caller);
    if (!attached) return drop(attached.error());
    cgroup_dir = *attached;
  } else if (!input.cgroup_path.empty()) {
    return drop(Error{std::string("cgroup_path is given but the scope is '") +
                          scope_name(input.scope) + "'; set scope to cgroup",
                      ErrorKind::kInvalidArgument});
  } else if (auto attached = sampler_.attach(*key, input.scope); !attached) {
    return drop(attached.error());
  }
  std::uint32_t owners_active = 0;
  for (const auto& [id, other] : runs_) {
    if (!other->machine->active()) continue;
    if (other->machine->ledger().info.target == *target) {
      return drop(Error{"PID " + std::to_string(pid) + " already has active run " + id,
                        ErrorKind::kFailedPrecondition});
    }
    if (other->machine->ledger().info.owner_uid == owner) ++owners_active;
  }
  // Fairness: no one user (root aside: the operator) fills the guard with runs.
  if (params_.max_active_runs_per_user != 0 && owner != 0 &&
      owners_active >= params_.max_active_runs_per_user) {
    return drop(
        refused("user", owner,
                Error{"uid " + std::to_string(owner) + " has " + std::to_string(owners_active) +
                          " active runs, the most admission.max_active_runs_per_user "
                          "allows",
                      ErrorKind::kResourceExhausted}));
  }
  RunInfo info;
  info.run_id = run_id;
  info.job = input.job.empty() ? "default" : input.job;
  info.labels = input.labels;
  info.target = *target;
  info.owner_uid = owner;
  info.model_bytes = input.model_bytes;
  info.declared_rounds = input.declared_rounds;
  info.hosts = input.hosts;
  info.scope = input.scope;
  info.cgroup_dir = cgroup_dir;
  if (!input.reservation_id.empty()) {
    // Checked before the baseline is taken, claimed only once the run exists: a failed start
    // leaves the reservation as it was.
    auto claimable = admission_.claimable(input.reservation_id, run_id, caller);
    if (!claimable) return drop(claimable.error());
    info.estimate_bytes = claimable->bytes;
    info.plan = claimable->source.plan;
    info.reservation_id = input.reservation_id;
  }
  Probe probe(sampler_, *key);
  auto machine = RunMachine::start(std::move(info), input.end_on_exit, probe, params_, observers_);
  if (!machine) return drop(machine.error());
  if (!input.reservation_id.empty()) {
    if (auto claimed = admission_.claim(input.reservation_id, run_id, caller); !claimed) {
      (*machine)->lost(clock_.now());
      return drop(claimed.error());
    }
  }
  apply_cgroup_budget(**machine);
  auto entry = std::make_unique<Entry>();
  entry->machine = std::move(*machine);
  entry->key = *key;
  // The cgroup's OOM kills count from the run's start.
  if (auto kills = sampler_.cgroup_oom_kills(*key)) entry->oom_kills = *kills;
  Entry& ref = *entry;
  runs_[run_id] = std::move(entry);
  watch_exit(ref, *target);
  sync_reservations();
  publish_counts();
  const RunLedger& ledger = ref.machine->ledger();
  log::info("run.start",
            {{"run", run_id},
             {"job", ledger.info.job},
             {"pid", pid},
             {"baseline_bytes", ledger.baseline.rss_bytes},
             {"estimate_bytes", ledger.info.estimate_bytes},
             {"exact_peaks", ref.machine->exact_peaks()},
             {"scope", scope_name(ledger.info.scope)},
             {"cgroup", ledger.info.cgroup_dir},
             {"thresholds", describe_thresholds(params_.detectors, ledger.info.model_bytes)}});
  return &ledger;
}

Result<MarkOutcome> RunRegistry::mark(const MarkInput& input, const Caller& caller) {
  // The run and its owner first: nothing is logged about a run for anyone who may not mark it.
  auto found = find_for_change(input.run_id, caller, "mark");
  if (!found) return found.error();
  if (auto s = check_mark_times(input.client_wall, input.deadline_wall, clock_.now()); !s) {
    if (s.error().kind == ErrorKind::kDeadlineExceeded) {
      log::info("run.mark_dropped_late", {{"run", input.run_id}, {"reason", s.error().message}});
    }
    return s.error();
  }
  Entry& entry = **found;
  Probe probe(sampler_, entry.key);
  auto out = entry.machine->mark(input, probe);
  if (out && input.kind == MarkKind::kRoundEnd) measure_tree_pss(entry, out->mark.round);
  after_change(entry);
  return out;
}

bool RunRegistry::place_ahead(const std::string& run_id, std::vector<CensusRange> ranges,
                              CensusPlacer::Done done) {
  const Entry* entry = find_entry(run_id);
  if (entry == nullptr || !entry->machine->active()) return false;
  placer_->place(entry->machine->ledger().info.target.pid, std::move(ranges), std::move(done));
  return true;
}

Status RunRegistry::add_census(const std::string& run_id, const Caller& caller, CensusRecord census,
                               const std::optional<MemoryReading>& reading,
                               std::optional<CensusPlacement> placed) {
  auto found = find_for_change(run_id, caller, "census");
  if (!found) return found.error();
  RunMachine& run = *(*found)->machine;
  const MemoryReading& at = reading ? *reading : run.ledger().last;
  if (placed) {
    census.placement = std::move(*placed);
  } else {
    // Not placed ahead (the run's end: once per run): maps and pagemap read here, on the loop.
    const ProcFs& procfs = sampler_.procfs();
    census.placement = place_census(procfs.root(), run.ledger().info.target.pid,
                                    census_ranges(census), procfs.page_size_bytes());
  }
  census.at_unix_ms = unix_ms(at.at);
  census.rss_bytes = at.rss_bytes;
  census.counted_bytes = at.anon_bytes + at.shmem_bytes + at.swap_bytes;
  if (census.round == 0) census.round = run.rounds_ended();
  run.add_census(std::move(census));
  return ok_status();
}

Result<EndOutcome> RunRegistry::end(const std::string& run_id, const Caller& caller,
                                    const std::string& failure, std::optional<EndFacts> facts,
                                    std::uint64_t exit_max_rss_bytes) {
  if (Entry* entry = find_entry(run_id);
      entry != nullptr && exit_max_rss_bytes > 0 && entry->machine->end_on_exit() &&
      may_change(caller, entry->machine->ledger().info.owner_uid)) {
    RunMachine& run = *entry->machine;
    run.fold_exit_peak(exit_max_rss_bytes);
    if (!run.active()) {  // ended with its process already: the peak was all that was missing
      EndOutcome out;
      out.reading = run.ledger().last;
      out.peak_bytes = run.ledger().peak_bytes;
      out.stored = run.store_ok();
      return out;
    }
  }
  auto found = find_for_change(run_id, caller, "end");
  if (!found) return found.error();
  Entry& entry = **found;
  RunMachine& run = *entry.machine;
  Probe probe(sampler_, entry.key);
  auto reading = run.take_reading(probe, /*reset=*/false);
  // A run that ends with its process (ramguard exec) whose process is gone: its exit status,
  // which the exit watcher is about to report, decides how it ends, not a runEnd racing it.
  if (!reading && run.end_on_exit() && entry.exit_watch != 0 &&
      ::kill(run.ledger().info.target.pid, 0) != 0 && errno == ESRCH) {
    return Error{
        "run " + run_id + " ends with its process, which has exited: its exit status decides",
        ErrorKind::kFailedPrecondition};
  }
  const Instant now = reading ? reading->at : clock_.now();
  auto out = run.end(reading ? std::optional<MemoryReading>(*reading) : std::nullopt, now, failure,
                     std::move(facts));
  const std::uint64_t released = admission_.release_run(run_id);
  log::info("run.reservation_released", {{"run", run_id}, {"bytes", released}});
  sync_reservations();
  publish_counts();
  after_change(entry);
  return out;
}

void RunRegistry::on_reading(const std::string& run_id, const Result<MemoryReading>& reading,
                             const ReadTiming& timing) {
  Entry* entry = find_entry(run_id);
  if (entry == nullptr || entry->key == 0) return;
  if (!reading) {
    // A process found gone is not "unreadable": its exit is on its way from the exit watcher.
    entry->machine->unreadable(reading.error().kind == ErrorKind::kNotFound ? "exited"
                                                                            : "unreadable");
    // The exit watcher normally reports an exit first; this covers a kernel without pidfds.
    if (entry->exit_watch == 0 && reading.error().kind == ErrorKind::kNotFound) {
      on_exit(run_id, ExitInfo{.detail = reading.error().message});
    }
    return;
  }
  Probe probe(sampler_, entry->key, timing);
  entry->machine->reading(*reading, probe);
  check_oom_kills(*entry);
  after_change(*entry);
}

void RunRegistry::check_oom_kills(Entry& entry) {
  if (entry.machine->ledger().info.scope != Scope::kCgroup) return;
  auto count = sampler_.cgroup_oom_kills(entry.key);
  if (!count) {  // unreadable (old kernel, removed cgroup): nothing to compare
    log::debug("run.oom_counter_unreadable",
               {{"run", entry.machine->run_id()}, {"reason", count.error().message}});
    return;
  }
  if (entry.oom_kills && *count > *entry.oom_kills) {
    entry.machine->oom_killed(*count - *entry.oom_kills, clock_.now());
  }
  entry.oom_kills = *count;
}

void RunRegistry::on_exit(const std::string& run_id, const ExitInfo& info) {
  Entry* entry = find_entry(run_id);
  if (entry == nullptr) return;
  const bool was_active = entry->machine->active();
  entry->exit_watch = 0;  // it has fired
  const RunLedger& ledger = entry->machine->ledger();
  if (was_active && entry->key != 0 && ledger.info.scope == Scope::kCgroup) {
    // What the exit watcher read when it saw the exit comes first: by now the cgroup may be
    // gone (removed right after the kill).
    const bool seen_at_exit =
        info.cgroup_peak && std::filesystem::path(info.cgroup_dir).lexically_normal() ==
                                std::filesystem::path(ledger.info.cgroup_dir).lexically_normal();
    if (seen_at_exit) {
      entry->machine->cgroup_peak_at_death(
          {info.cgroup_peak->peak_usage_bytes, info.cgroup_peak->limit_bytes});
    } else if (auto peak = sampler_.cgroup_peak(entry->key)) {
      entry->machine->cgroup_peak_at_death({peak->peak_usage_bytes, peak->limit_bytes});
    } else {
      log::debug("run.cgroup_peak_unreadable",
                 {{"run", entry->machine->run_id()}, {"reason", peak.error().message}});
    }
  }
  if (was_active && entry->key != 0 && ledger.info.scope == Scope::kProcess) {
    entry->machine->process_hwm_at_death(sampler_.last_hwm_bytes(entry->key));
  }
  entry->machine->process_exited(info, clock_.now());
  if (was_active) {
    admission_.release_run(run_id);
    sync_reservations();
    publish_counts();
  }
  after_change(*entry);
}

void RunRegistry::on_deadline(const std::string& run_id) {
  Entry* entry = find_entry(run_id);
  if (entry == nullptr) return;
  if (entry->key != 0) {
    Probe probe(sampler_, entry->key);
    entry->machine->advance(clock_.now(), &probe);
  } else {
    entry->machine->advance(clock_.now(), nullptr);
  }
  after_change(*entry);
}

// After anything a machine did: stop sampling a run that needs no more readings, or set its
// alarm for the next deadline.
void RunRegistry::after_change(Entry& entry) {
  RunMachine& run = *entry.machine;
  const Instant now = clock_.now();
  if (!run.wants_sampling() && entry.key != 0) {
    run.sampling_stopped(now);
    sampler_.remove(entry.key);
    entry.key = 0;
    if (entry.exit_watch != 0) exits_.cancel(entry.exit_watch);
    entry.exit_watch = 0;
    entry.forget_at = now;
    entry.forget_at->monotonic += params_.ended_retention;
  }
  const auto next = run.next_deadline();
  if (!next) {
    if (entry.deadline) entry.deadline->cancel();
    return;
  }
  if (!entry.deadline) entry.deadline = alarms_.make();
  entry.deadline->set(next->monotonic, [this, id = run.run_id(), alive = alive_] {
    if (*alive) on_deadline(id);
  });
}

void RunRegistry::housekeeping() {
  const Instant now = clock_.now();
  const auto expired = admission_.expire();
  for (const auto& r : expired) {
    log::info("admission.lease_expired",
              {{"reservation", r.id}, {"job", r.job}, {"bytes", r.bytes}});
  }
  if (!expired.empty()) sync_reservations();
  for (auto it = runs_.begin(); it != runs_.end();) {
    const Entry& entry = *it->second;
    if (entry.forget_at && now.monotonic >= entry.forget_at->monotonic) {
      it = runs_.erase(it);
    } else {
      ++it;
    }
  }
  publish_counts();
}

// Ended runs stay in memory for the retention, and starting and ending runs in a loop must not
// grow that without bound. At the limit (runs_in_memory_limit) the ended runs no longer
// sampled leave memory early, oldest first (the ledger keeps them); ended runs still checking
// their release stay until it is decided, so if they and the active runs fill it, the start
// is refused.
Status RunRegistry::make_room_for_a_run() {
  const std::size_t limit = runs_in_memory_limit(params_.max_runs);
  if (runs_.size() < limit) return ok_status();
  std::vector<std::pair<std::chrono::nanoseconds, std::string>> forgettable;
  for (const auto& [id, entry] : runs_) {
    if (entry->forget_at) forgettable.emplace_back(entry->forget_at->monotonic, id);
  }
  std::sort(forgettable.begin(), forgettable.end());
  const std::size_t forget = std::min(forgettable.size(), runs_.size() - limit + 1);
  for (std::size_t i = 0; i < forget; ++i) runs_.erase(forgettable[i].second);
  if (forget > 0) log::info("run.forgotten_early", {{"runs", forget}, {"limit", limit}});
  if (runs_.size() < limit) return ok_status();
  return Error{"too many runs in memory (limit " + std::to_string(limit) +
                   "): " + std::to_string(runs_.size() - active_runs()) +
                   " ended runs are still checking their release; try again after release.grace",
               ErrorKind::kResourceExhausted};
}

void RunRegistry::publish_counts() {
  std::map<std::uint32_t, std::uint64_t> by_owner;
  std::size_t active = 0;
  for (const auto& [id, entry] : runs_) {
    if (!entry->machine->active()) continue;
    ++active;
    ++by_owner[entry->machine->ledger().info.owner_uid];
  }
  observers_.notify([&](RunObserver& o) { o.runs_active(active, by_owner); });
}

// One write per change of the admission state: every reservation row is current, and the
// ledger drops the ones that ended (including rows restored after a restart).
void RunRegistry::sync_reservations() {
  const std::vector<Reservation> rows = admission_.reservations();
  const std::uint64_t reserved = admission_.reserved_bytes();
  observers_.write("reservations", "",
                   [&](RunObserver& o) { return o.reservations(rows, reserved); });
}

}  // namespace ramguard
