#include "runs/run_registry.hpp"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <random>

#include "common/log.hpp"
#include "common/units.hpp"
#include "metrics/exporter.hpp"
#include "runs/watch_list.hpp"
#include "store/store.hpp"
#include "verdicts/estimate.hpp"
#include "verdicts/exit.hpp"

namespace ramguard {

RunRegistry::RunRegistry(asio::io_context& io, const Clock& clock, Sampler& sampler,
                         ExitWatcher& exits, Admission& admission, RegistryParams params)
    : io_(io),
      clock_(clock),
      sampler_(sampler),
      exits_(exits),
      admission_(admission),
      params_(std::move(params)),
      watches_(std::make_unique<WatchList>(sampler, exits, clock)) {}

RunRegistry::~RunRegistry() {
  *alive_ = false;
}

void RunRegistry::set_store(Store* store) {
  store_ = store;
  if (metrics_ != nullptr) metrics_->set_store_available(store_ != nullptr);
}

void RunRegistry::set_metrics(MetricsExporter* metrics) {
  metrics_ = metrics;
  watches_->set_metrics(metrics);
  if (metrics_ != nullptr) {
    metrics_->set_store_available(store_ != nullptr);
    metrics_->set_runs_active(active_runs());
  }
}

void RunRegistry::set_params(const RegistryParams& params) {
  params_ = params;
}

std::string RunRegistry::new_run_id() {
  static std::mt19937_64 rng{std::random_device{}()};
  const std::time_t secs = static_cast<std::time_t>(
      std::chrono::duration_cast<std::chrono::seconds>(clock_.now().wall).count());
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof buf, "r-%04d%02d%02d-%02d%02d%02d-%04x", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<unsigned>(rng() & 0xffff));
  return buf;
}

std::size_t RunRegistry::active_runs() const {
  return static_cast<std::size_t>(
      std::count_if(runs_.begin(), runs_.end(), [](const auto& r) { return r.second->active(); }));
}

const Run* RunRegistry::find(const std::string& run_id) const {
  auto it = runs_.find(run_id);
  return it == runs_.end() ? nullptr : it->second.get();
}

Run* RunRegistry::find_mut(const std::string& run_id) {
  auto it = runs_.find(run_id);
  return it == runs_.end() ? nullptr : it->second.get();
}

std::vector<const Run*> RunRegistry::runs() const {
  std::vector<const Run*> out;
  for (const auto& [id, run] : runs_) out.push_back(run.get());
  std::sort(out.begin(), out.end(), [](const Run* a, const Run* b) {
    return a->ledger.started.monotonic < b->ledger.started.monotonic;
  });
  return out;
}

Result<Run*> RunRegistry::find_for_change(const std::string& run_id, const Caller& caller,
                                          const char* what) {
  if (run_id.empty()) return Error{std::string(what) + " needs a run id"};
  Run* run = find_mut(run_id);
  if (run == nullptr) return Error{"unknown run id '" + run_id + "'", ErrorKind::kNotFound};
  if (!caller.privileged && caller.uid != run->ledger.info.owner_uid) {
    return Error{"uid " + std::to_string(caller.uid) + " may not " + what + " run " + run_id +
                     ": its process is owned by uid " + std::to_string(run->ledger.info.owner_uid),
                 ErrorKind::kPermissionDenied};
  }
  if (!run->active()) {
    return Error{"run " + run_id + " has already " +
                     (run->ledger.state == RunState::kEnded
                          ? std::string("ended")
                          : std::string(run_state_name(run->ledger.state))),
                 ErrorKind::kFailedPrecondition};
  }
  return run;
}

Result<const RunLedger*> RunRegistry::start(const StartRunInput& input, const Caller& caller) {
  if (active_runs() >= params_.max_runs) {
    return Error{"too many active runs (limit " + std::to_string(params_.max_runs) + ")",
                 ErrorKind::kResourceExhausted};
  }
  const pid_t pid = input.pid != 0 ? input.pid : caller.pid;
  if (pid <= 0) return Error{"run start needs a pid (the caller's PID is unknown on TCP)"};
  const std::string run_id = new_run_id();
  auto key = sampler_.add(
      pid, [this, run_id, alive = alive_](const TargetId&, const Result<MemoryReading>& r) {
        if (*alive) on_reading(run_id, r);
      });
  if (!key) return Error{key.error().message, ErrorKind::kNotFound};
  const auto target = sampler_.target(*key);
  const std::uint32_t owner = sampler_.owner_uid(*key).value_or(0);
  auto drop = [&](Error e) -> Result<const RunLedger*> {
    sampler_.remove(*key);
    return e;
  };
  if (!caller.privileged && caller.uid != owner) {
    return drop(Error{"uid " + std::to_string(caller.uid) + " may not start a run on PID " +
                          std::to_string(pid) + ": it is owned by uid " + std::to_string(owner),
                      ErrorKind::kPermissionDenied});
  }
  for (const auto& [id, other] : runs_) {
    if (other->active() && other->ledger.info.target == *target) {
      return drop(Error{"PID " + std::to_string(pid) + " already has active run " + id,
                        ErrorKind::kFailedPrecondition});
    }
  }
  auto run = std::make_unique<Run>();
  run->samples = SampleSeries(params_.series);
  run->key = *key;
  run->end_on_exit = input.end_on_exit;
  RunInfo& info = run->ledger.info;
  info.run_id = run_id;
  info.job = input.job.empty() ? "default" : input.job;
  info.labels = input.labels;
  info.target = *target;
  info.owner_uid = owner;
  info.model_bytes = input.model_bytes;
  info.declared_rounds = input.declared_rounds;
  info.hosts = input.hosts;
  if (!input.reservation_id.empty()) {
    auto claimed = admission_.claim(input.reservation_id, run_id);
    if (!claimed) return drop(Error{claimed.error().message, ErrorKind::kFailedPrecondition});
    for (const auto& r : admission_.reservations()) {
      if (r.reservation_id == input.reservation_id) {
        info.estimate_bytes = r.bytes;
        const auto& src = r.estimate_source;
        if (src.rfind("plan:", 0) == 0) info.plan = src.substr(5);
      }
    }
    info.reservation_id = input.reservation_id;
  }
  auto baseline = mark_reading(*run, /*reset=*/false);
  if (!baseline) {
    admission_.release_run(run_id);
    return drop(Error{baseline.error().message, ErrorKind::kUnavailable});
  }
  auto reset = sampler_.reset_hwm(*key);
  run->exact_peaks = reset.ok();
  if (!reset) {
    log::warning("run.exact_peaks_unavailable",
                 {{"run", run_id}, {"pid", pid}, {"reason", reset.error().message}});
  }
  RunLedger& ledger = run->ledger;
  ledger.started = baseline->at;
  ledger.baseline = *baseline;
  ledger.last = *baseline;
  ledger.peak_bytes = baseline->rss_bytes;
  ledger.peak_exact = run->exact_peaks;
  run->last_mark_at = baseline->at;
  run->samples.add(*baseline);
  MarkRecord start_mark;
  start_mark.seq = 1;
  start_mark.kind = MarkKind::kRunStart;
  start_mark.reading = *baseline;
  ledger.marks.push_back(start_mark);
  auto watched = exits_.watch(*target, [this, run_id, alive = alive_](ExitInfo exit) {
    if (*alive) on_exit(run_id, exit);
  });
  if (watched) {
    run->exit_watch = *watched;
  } else {
    log::warning("run.exit_watch_unavailable",
                 {{"run", run_id}, {"reason", watched.error().message}});
  }
  Run& stored = *run;
  runs_[run_id] = std::move(run);
  store_write(stored, "begin run", [&] { return store_->begin_run(stored.ledger); });
  sync_reservations();
  if (metrics_ != nullptr) {
    metrics_->set_runs_active(active_runs());
    metrics_->observe_reading(info.job, *baseline);
    metrics_->observe_peak(info.job, ledger.peak_bytes, false);
    metrics_->set_target_up(info.job, true, stored.exact_peaks ? "" : "hwm_reset_denied");
    metrics_->set_reserved_bytes(admission_.reserved_bytes());
  }
  log::info("run.start", {{"run", run_id},
                          {"job", stored.ledger.info.job},
                          {"pid", pid},
                          {"baseline_bytes", baseline->rss_bytes},
                          {"estimate_bytes", stored.ledger.info.estimate_bytes},
                          {"exact_peaks", stored.exact_peaks}});
  return &stored.ledger;
}

Result<EndOutcome> RunRegistry::end(const std::string& run_id, const Caller& caller) {
  auto found = find_for_change(run_id, caller, "end");
  if (!found) return found.error();
  Run& run = **found;
  auto reading = mark_reading(run, /*reset=*/false);
  // A run that ends with its process (ramguard exec) whose process is gone: its exit status,
  // which the exit watcher is about to report, decides how it ends, not a runEnd racing it.
  if (!reading && run.end_on_exit && run.exit_watch != 0 &&
      ::kill(run.ledger.info.target.pid, 0) != 0 && errno == ESRCH) {
    return Error{
        "run " + run_id + " ends with its process, which has exited: its exit status decides",
        ErrorKind::kFailedPrecondition};
  }
  const Instant now = reading ? reading->at : clock_.now();
  EndOutcome out;
  const std::size_t verdicts_before = run.ledger.verdicts.size();
  MarkRecord mark;
  mark.seq = run.ledger.marks.size() + 1;
  mark.kind = MarkKind::kRunEnd;
  mark.round = run.rounds_ended;
  mark.reading = reading ? *reading : run.ledger.last;
  run.ledger.marks.push_back(mark);
  finish(run, RunState::kEnded, now);
  if (reading) {
    run.samples.add(*reading);
    check_release(run, now);
  }
  out.reading = mark.reading;
  out.peak_bytes = run.ledger.peak_bytes;
  out.stored = run.store_ok && store_ != nullptr;
  out.verdicts.assign(run.ledger.verdicts.begin() + static_cast<long>(verdicts_before),
                      run.ledger.verdicts.end());
  return out;
}

// Common to end, exit and loss: close the books on a run.
void RunRegistry::finish(Run& run, RunState state, const Instant& at) {
  RunLedger& ledger = run.ledger;
  ledger.state = state;
  ledger.ended = at;
  if (state == RunState::kEnded) {
    for (std::size_t index : run.open_phases) {  // a run that ends mid-phase closes them
      ledger.phases[index].end = at;
      store_write(run, "close phase",
                  [&] { return store_->save_phase(ledger.info.run_id, ledger.phases[index]); });
    }
    run.open_phases.clear();
  }
  const std::uint64_t released = admission_.release_run(ledger.info.run_id);
  check_budget(run);
  if (auto estimate = assess_estimate(ledger.peak_bytes, ledger.peak_exact,
                                      ledger.info.estimate_bytes, at, params_.detectors)) {
    emit(run, estimate->verdict);
  }
  const MarkRecord* last_mark = ledger.marks.empty() ? nullptr : &ledger.marks.back();
  store_write(run, "end run", [&] {
    if (last_mark != nullptr && last_mark->kind == MarkKind::kRunEnd) {
      auto s = store_->append_mark(ledger.info.run_id, *last_mark);
      if (!s) return s;
    }
    return store_->end_run(ledger.info.run_id, state, at, ledger.peak_bytes, ledger.last,
                           ledger.peak_exact);
  });
  sync_reservations();
  if (metrics_ != nullptr) {
    metrics_->set_runs_active(active_runs());
    metrics_->set_reserved_bytes(admission_.reserved_bytes());
  }
  log::info("run.end", {{"run", ledger.info.run_id},
                        {"job", ledger.info.job},
                        {"state", run_state_name(state)},
                        {"peak_bytes", ledger.peak_bytes},
                        {"peak_exact", ledger.peak_exact},
                        {"released_reservation_bytes", released}});
}

void RunRegistry::on_exit(const std::string& run_id, const ExitInfo& info) {
  Run* run = find_mut(run_id);
  if (run == nullptr) return;
  const Instant now = clock_.now();
  run->exited_at = now;
  const bool clean = info.status_known && info.signal == 0 && info.exit_code == 0;
  if (run->active() && run->end_on_exit && clean) {
    end_with_process(*run, info, now);
  } else if (run->active()) {
    finish(*run, RunState::kExited, now);
    emit(*run,
         exited_verdict(run->ledger,
                        info.status_known && info.signal == 0 ? std::optional<int>(info.exit_code)
                                                              : std::nullopt,
                        info.signal != 0 ? std::optional<int>(info.signal) : std::nullopt,
                        info.oom_killed, now));
    log::warning("run.exited", {{"run", run_id}, {"detail", info.detail}});
  } else {
    check_release(*run, now);
  }
  stop_sampling(*run);
}

// A run that ends with its process (ramguard exec): a clean exit is its normal end, as if
// runEnd had been sent with the last reading; the release check passes since nothing is held.
void RunRegistry::end_with_process(Run& run, const ExitInfo& info, const Instant& now) {
  MarkRecord mark;
  mark.seq = run.ledger.marks.size() + 1;
  mark.kind = MarkKind::kRunEnd;
  mark.round = run.rounds_ended;
  mark.reading = run.ledger.last;
  run.ledger.marks.push_back(mark);
  finish(run, RunState::kEnded, now);
  log::info("run.ended_with_process", {{"run", run.ledger.info.run_id}, {"detail", info.detail}});
  check_release(run, now);
}

void RunRegistry::stop_sampling(Run& run) {
  if (run.key == 0) return;
  // A round that ended just before the run: its floor is taken now, not lost with the timer.
  for (std::size_t i = 0; i < run.ledger.boundaries.size(); ++i) {
    if (!run.ledger.boundaries[i].settled) settle_boundary(run.ledger.info.run_id, i);
  }
  sampler_.remove(run.key);
  exits_.cancel(run.exit_watch);
  run.exit_watch = 0;
  run.key = 0;
  if (run.settle_timer) run.settle_timer->cancel();
  flush_progress(run);
  run.forget_at = clock_.now();
  run.forget_at->monotonic += params_.ended_retention;
  if (metrics_ != nullptr) metrics_->retire_job(run.ledger.info.job, clock_.now());
}

void RunRegistry::housekeeping() {
  const Instant now = clock_.now();
  const auto expired = admission_.expire();
  for (const auto& r : expired) {
    log::info("admission.lease_expired",
              {{"reservation", r.reservation_id}, {"job", r.job}, {"bytes", r.bytes}});
  }
  if (!expired.empty()) sync_reservations();
  for (auto it = runs_.begin(); it != runs_.end();) {
    Run& run = *it->second;
    if (!run.active() && !run.release_decided && run.key != 0) check_release(run, now);
    if (run.forget_at && now.monotonic >= run.forget_at->monotonic) {
      it = runs_.erase(it);
    } else {
      ++it;
    }
  }
  if (metrics_ != nullptr) {
    metrics_->set_reserved_bytes(admission_.reserved_bytes());
    metrics_->sweep(now);
    (void)metrics_->update_self("/proc/self/statm");
    metrics_->observe_sample_duration(sampler_.last_sample_duration_seconds());
  }
}

// One transaction per change of the admission state: every reservation row is current and the
// ones that ended are gone.
void RunRegistry::sync_reservations() {
  if (store_ == nullptr) return;
  std::vector<std::string> current;
  auto s = store_->atomically([&]() -> Status {
    for (const auto& r : admission_.reservations()) {
      current.push_back(r.reservation_id);
      StoredReservation row;
      row.id = r.reservation_id;
      row.job = r.job;
      row.bytes = r.bytes;
      row.run_id = r.run_id;
      row.owner_uid = r.owner_uid;
      row.created_wall_ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(r.created.wall).count();
      row.expires_wall_ms =
          row.created_wall_ms +
          std::chrono::duration_cast<std::chrono::milliseconds>(admission_.lease()).count();
      if (auto saved = store_->save_reservation(row); !saved) return saved;
    }
    for (const auto& id : stored_reservations_) {
      if (std::find(current.begin(), current.end(), id) == current.end()) {
        if (auto deleted = store_->delete_reservation(id); !deleted) return deleted;
      }
    }
    return ok_status();
  });
  if (!s) {
    log::debug("store.write_failed", {{"what", "reservations"}, {"reason", s.error().message}});
    return;
  }
  stored_reservations_ = std::move(current);
}

Status RunRegistry::watch(pid_t pid) {
  return watches_->add(pid);
}

}  // namespace ramguard
