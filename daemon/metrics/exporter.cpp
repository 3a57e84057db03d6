#include "metrics/exporter.hpp"

#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <exception>
#include <map>

#include "common/log.hpp"
#include "common/verdict_rank.hpp"
#include "metrics/families.hpp"
#include "metrics/job_series.hpp"
#include "metrics/listen_address.hpp"
#include "metrics/self_stats.hpp"
#include "runs/watch_list.hpp"

namespace ramguard {

// Series without target labels, created on first use so nothing is exported before it is known.
struct GlobalSeries {
  prometheus::Gauge* budget = nullptr;
  prometheus::Gauge* margin = nullptr;
  prometheus::Gauge* reserved = nullptr;
  prometheus::Gauge* runs_active = nullptr;
  prometheus::Gauge* store_available = nullptr;
  prometheus::Gauge* store_writable = nullptr;
  prometheus::Gauge* max_targets = nullptr;
  prometheus::Gauge* targets_folded = nullptr;
  prometheus::Histogram* sample_duration = nullptr;
  prometheus::Gauge* self_rss = nullptr;
  prometheus::Gauge* jemalloc[4] = {nullptr, nullptr, nullptr, nullptr};
};

namespace {

prometheus::Gauge& global(prometheus::Gauge*& slot, prometheus::Family<prometheus::Gauge>& fam) {
  if (slot == nullptr) slot = &fam.Add({});
  return *slot;
}

double bytes(std::uint64_t value) {
  return static_cast<double>(value);
}

}  // namespace

MetricsExporter::MetricsExporter()
    : registry_(std::make_shared<prometheus::Registry>()),
      families_(std::make_unique<MetricFamilies>(*registry_)),
      targets_(std::make_unique<TargetSeries>()),
      globals_(std::make_unique<GlobalSeries>()) {
  families_->build_info.Add({{"version", RAMGUARD_VERSION}}).Set(1);
  families_->start_time_seconds.Add({}).Set(
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  global(globals_->runs_active, families_->runs_active).Set(0);
  global(globals_->reserved, families_->reserved_bytes).Set(0);
  // Present from the first scrape: an alert on 0 must not wait for the first failure.
  global(globals_->store_available, families_->store_available).Set(0);
  global(globals_->store_writable, families_->store_writable).Set(0);
  global(globals_->max_targets, families_->max_targets)
      .Set(static_cast<double>(targets_->max_targets()));
  global(globals_->targets_folded, families_->targets_folded).Set(0);
  globals_->sample_duration =
      &families_->sample_duration_seconds.Add({}, sample_duration_buckets());
}

MetricsExporter::~MetricsExporter() {
  // Stop serving before the registry and families go away.
  exposer_.reset();
}

Result<std::unique_ptr<MetricsExporter>> MetricsExporter::start(
    const std::string& listen_host_port) {
  auto address = parse_listen_address(listen_host_port);
  if (!address) return address.error();
  std::unique_ptr<MetricsExporter> exporter(new MetricsExporter());
  try {
    exporter->exposer_ = std::make_unique<prometheus::Exposer>(address->civetweb_spec(), 2);
  } catch (const std::exception& e) {
    // civetweb only says it could not start; a probe bind says why.
    std::string why = probe_listen_error(*address);
    if (why.empty()) why = e.what();
    return Error{"metrics address '" + listen_host_port + "': cannot listen: " + why};
  }
  exporter->exposer_->RegisterCollectable(exporter->registry_);
  return exporter;
}

std::uint16_t MetricsExporter::port() const {
  const auto ports = exposer_->GetListeningPorts();
  return ports.empty() ? 0 : static_cast<std::uint16_t>(ports.front());
}

std::string MetricsExporter::job_for_pid(pid_t pid) {
  return WatchList::job_for_pid(pid);
}

void MetricsExporter::set_budget(std::uint64_t budget_bytes, std::uint64_t margin_bytes) {
  std::lock_guard lock(mutex_);
  global(globals_->budget, families_->budget_bytes).Set(bytes(budget_bytes));
  global(globals_->margin, families_->budget_margin_bytes).Set(bytes(margin_bytes));
}

void MetricsExporter::set_reserved_bytes(std::uint64_t total_bytes) {
  std::lock_guard lock(mutex_);
  global(globals_->reserved, families_->reserved_bytes).Set(bytes(total_bytes));
}

void MetricsExporter::set_runs_active(std::size_t runs) {
  std::lock_guard lock(mutex_);
  global(globals_->runs_active, families_->runs_active).Set(static_cast<double>(runs));
}

void MetricsExporter::set_store_available(bool available) {
  std::lock_guard lock(mutex_);
  global(globals_->store_available, families_->store_available).Set(available ? 1 : 0);
}

void MetricsExporter::set_store_writable(bool writable) {
  std::lock_guard lock(mutex_);
  global(globals_->store_writable, families_->store_writable).Set(writable ? 1 : 0);
}

namespace {

constexpr const char* kExitedReason = "exited";
// Degraded reasons present with 0 from the start, so rules and dashboards tell "fine" from
// "missing"; other reasons appear when first set.
constexpr const char* kKnownDegradedReasons[] = {"hwm_reset_denied", "unreadable"};

bool is_run(const TargetRef& target) {
  return target.run_id != target.job;  // a watched PID is "pid-<PID>" for both
}

std::string target_key(const TargetRef& target) {
  return std::string(target.run_id);
}

std::string admission_key(std::string_view job) {
  return "admission:" + std::string(job);
}

}  // namespace

const std::vector<std::string>& MetricsExporter::warning_kinds() {
  static const std::vector<std::string> kinds = {verdict_kind::kOverBudget, verdict_kind::kHeadroom,
                                                 verdict_kind::kRunaway,
                                                 verdict_kind::kGrowthWarning, verdict_kind::kLeak};
  return kinds;
}

TargetState& MetricsExporter::state_of(const TargetRef& target) {
  prometheus::Labels labels{{kJobLabel, std::string(target.job)}};
  labels[kRunLabel] = std::string(target.run_id);
  TargetState& state = target_state(target_key(target), labels);
  if (!state.state_series) {
    state.state_series = true;
    targets_->metric(state, families_->target_up).Set(1);
    targets_->metric(state, families_->target_exited).Set(0);
    for (const char* reason : kKnownDegradedReasons) {
      targets_->metric(state, families_->target_degraded, {{"reason", reason}}).Set(0);
    }
    if (is_run(target)) {
      for (const std::string& kind : warning_kinds()) {
        targets_->metric(state, families_->verdict_active, {{"kind", kind}}).Set(0);
      }
    }
  }
  return state;
}

void MetricsExporter::remove_readings(TargetState& state) {
  targets_->remove_metric(state, &families_->target_rss_bytes);
  for (const char* kind : {"anon", "file", "shmem"}) {
    targets_->remove_metric(state, &families_->target_memory_bytes, {{"kind", kind}});
  }
  targets_->remove_metric(state, &families_->target_swap_bytes);
  targets_->remove_metric(state, &families_->target_last_reading_timestamp_seconds);
  state.rss = state.anon = state.file = state.shmem = state.last_reading = nullptr;
}

void MetricsExporter::set_degraded(TargetState& state, const std::string& reason) {
  if (reason == state.degraded_reason) return;
  if (!state.degraded_reason.empty()) {
    targets_->metric(state, families_->target_degraded, {{"reason", state.degraded_reason}}).Set(0);
  }
  state.degraded_reason = reason;
  if (!reason.empty()) {
    targets_->metric(state, families_->target_degraded, {{"reason", reason}}).Set(1);
  }
}

void MetricsExporter::observe_reading(const TargetRef& target, const MemoryReading& reading) {
  std::lock_guard lock(mutex_);
  TargetState& t = state_of(target);
  if (t.exited) return;  // a dead process has no current value
  if (!t.readable) {
    // A reading proves the process readable again.
    t.readable = true;
    targets_->metric(t, families_->target_up).Set(1);
    if (t.degraded_reason == "unreadable") set_degraded(t, "");
  }
  if (t.rss == nullptr) {
    t.rss = &targets_->metric(t, families_->target_rss_bytes);
    t.anon = &targets_->metric(t, families_->target_memory_bytes, {{"kind", "anon"}});
    t.file = &targets_->metric(t, families_->target_memory_bytes, {{"kind", "file"}});
    t.shmem = &targets_->metric(t, families_->target_memory_bytes, {{"kind", "shmem"}});
    t.last_reading = &targets_->metric(t, families_->target_last_reading_timestamp_seconds);
  }
  t.rss->Set(bytes(reading.rss_bytes));
  t.anon->Set(bytes(reading.anon_bytes));
  if (reading.source == ReadingSource::kMark) {
    t.last_shmem_bytes = reading.shmem_bytes;
    t.file->Set(bytes(reading.file_bytes));
    targets_->metric(t, families_->target_swap_bytes).Set(bytes(reading.swap_bytes));
  } else {
    // statm's shared pages are file + shmem: split with the shmem of the last mark, so the
    // three kinds still add up to RSS.
    const std::uint64_t shmem = std::min(t.last_shmem_bytes, reading.file_bytes);
    t.file->Set(bytes(reading.file_bytes - shmem));
  }
  t.shmem->Set(bytes(reading.source == ReadingSource::kMark
                         ? reading.shmem_bytes
                         : std::min(t.last_shmem_bytes, reading.file_bytes)));
  t.last_reading->Set(std::chrono::duration<double>(reading.at.wall).count());
}

void MetricsExporter::observe_peak(const TargetRef& target, std::uint64_t peak_bytes, bool exact) {
  std::lock_guard lock(mutex_);
  TargetState& t = state_of(target);
  const double peak = bytes(peak_bytes);
  auto& exact_gauge = targets_->metric(t, families_->target_peak_exact);
  if (peak > t.peak_bytes) {
    t.peak_bytes = peak;
    targets_->metric(t, families_->target_peak_bytes).Set(peak);
    exact_gauge.Set(exact ? 1 : 0);
  } else if (peak == t.peak_bytes && exact) {
    exact_gauge.Set(1);  // the same peak, now confirmed by the high-water mark
  }
}

void MetricsExporter::set_target_up(const TargetRef& target, bool readable,
                                    std::string_view reason) {
  std::lock_guard lock(mutex_);
  if (readable) {
    // A target watched again after it exited (the same watched PID number): start afresh.
    if (TargetState* old = targets_->find(target_key(target)); old != nullptr && old->exited) {
      targets_->remove(target_key(target));
    }
  }
  TargetState& t = state_of(target);
  if (!readable && reason == kExitedReason) {
    t.exited = true;
    t.readable = false;
    targets_->metric(t, families_->target_up).Set(0);
    targets_->metric(t, families_->target_exited).Set(1);
    set_degraded(t, "");
    remove_readings(t);
    // A dead process holds no warning: only the verdict counters remember.
    if (is_run(target)) {
      for (const std::string& kind : warning_kinds()) {
        targets_->metric(t, families_->verdict_active, {{"kind", kind}}).Set(0);
      }
    }
    return;
  }
  if (t.exited) return;
  t.readable = readable;
  targets_->metric(t, families_->target_up).Set(readable ? 1 : 0);
  set_degraded(t, reason.empty() ? std::string() : targets_->bounded_value(t, "reason", reason));
}

void MetricsExporter::observe_phase(const TargetRef& target, std::string_view phase,
                                    std::uint64_t peak_bytes, double duration_seconds) {
  std::lock_guard lock(mutex_);
  TargetState& t = state_of(target);
  const prometheus::Labels labels{{"phase", targets_->bounded_value(t, "phase", phase)}};
  targets_->metric(t, families_->phase_peak_bytes, labels).Set(bytes(peak_bytes));
  targets_->metric(t, families_->phase_duration_seconds, labels).Set(duration_seconds);
}

void MetricsExporter::observe_boundary(const TargetRef& target, std::uint32_t round,
                                       std::uint64_t rss_bytes, std::uint64_t floor_bytes) {
  std::lock_guard lock(mutex_);
  TargetState& t = state_of(target);
  targets_->metric(t, families_->boundary_round).Set(round);
  targets_->metric(t, families_->boundary_rss_bytes).Set(bytes(rss_bytes));
  targets_->metric(t, families_->boundary_floor_bytes).Set(bytes(floor_bytes));
}

void MetricsExporter::observe_scope(const TargetRef& target, std::string_view scope) {
  std::lock_guard lock(mutex_);
  TargetState& t = state_of(target);
  targets_->metric(t, families_->target_scope_info, {{"scope", std::string(scope)}}).Set(1);
}

void MetricsExporter::observe_allocator(const TargetRef& target, std::uint64_t live_bytes,
                                        std::uint64_t free_bytes) {
  std::lock_guard lock(mutex_);
  TargetState& t = state_of(target);
  targets_->metric(t, families_->boundary_allocator_live_bytes).Set(bytes(live_bytes));
  targets_->metric(t, families_->boundary_allocator_free_bytes).Set(bytes(free_bytes));
}

void MetricsExporter::observe_gap(const TargetRef& target, std::string_view from_to,
                                  double seconds) {
  std::lock_guard lock(mutex_);
  TargetState& t = state_of(target);
  targets_
      ->metric(t, families_->phase_gap_seconds,
               {{"gap", targets_->bounded_value(t, "gap", from_to)}})
      .Set(seconds);
}

void MetricsExporter::observe_admission(std::string_view job, bool admitted,
                                        std::int64_t headroom_bytes) {
  std::lock_guard lock(mutex_);
  TargetState& t = target_state(admission_key(job), {{kJobLabel, std::string(job)}});
  t.retired_at.reset();
  targets_
      ->metric(t, families_->admissions_total, {{"decision", admitted ? "admitted" : "refused"}})
      .Increment();
  targets_->metric(t, families_->admission_headroom_bytes).Set(static_cast<double>(headroom_bytes));
}

void MetricsExporter::observe_verdict(const TargetRef& target, const Verdict& verdict) {
  std::lock_guard lock(mutex_);
  TargetState& t = state_of(target);
  const std::string kind = targets_->bounded_value(t, "kind", verdict.kind);
  // A release either passed or failed: say so, as reports do, rather than a severity.
  const std::string severity =
      verdict.kind == verdict_kind::kRelease
          ? release_outcome(verdict.passed, severity_name(verdict.severity))
          : severity_name(verdict.severity);
  targets_->metric(t, families_->verdicts_total, {{"kind", kind}, {"severity", severity}})
      .Increment();
  const auto& kinds = warning_kinds();
  if (std::find(kinds.begin(), kinds.end(), verdict.kind) == kinds.end()) return;
  if (verdict.severity == Severity::kInfo && !verdict.cleared) return;
  const bool holds = !verdict.cleared && !verdict.passed && !t.finished && !t.exited;
  targets_->metric(t, families_->verdict_active, {{"kind", kind}}).Set(holds ? 1 : 0);
}

void MetricsExporter::run_finished(const TargetRef& target) {
  std::lock_guard lock(mutex_);
  TargetState& t = state_of(target);
  t.finished = true;
  for (const std::string& kind : warning_kinds()) {
    targets_->metric(t, families_->verdict_active, {{"kind", kind}}).Set(0);
  }
}

void MetricsExporter::observe_sample_duration(double seconds) {
  globals_->sample_duration->Observe(seconds);  // created in the constructor; thread-safe
}

Status MetricsExporter::update_self(const std::filesystem::path& proc_self_statm) {
  auto rss = read_statm_rss_bytes(proc_self_statm);
  const auto jemalloc = read_jemalloc_stats();
  std::lock_guard lock(mutex_);
  if (jemalloc) {
    global(globals_->jemalloc[0], families_->jemalloc_allocated_bytes)
        .Set(bytes(jemalloc->allocated_bytes));
    global(globals_->jemalloc[1], families_->jemalloc_active_bytes)
        .Set(bytes(jemalloc->active_bytes));
    global(globals_->jemalloc[2], families_->jemalloc_resident_bytes)
        .Set(bytes(jemalloc->resident_bytes));
    global(globals_->jemalloc[3], families_->jemalloc_retained_bytes)
        .Set(bytes(jemalloc->retained_bytes));
  }
  if (!rss) return Error{"own memory: " + rss.error().message};
  global(globals_->self_rss, families_->self_rss_bytes).Set(bytes(*rss));
  return ok_status();
}

bool MetricsExporter::jemalloc_available() {
  return jemalloc_linked();
}

void MetricsExporter::set_retention(std::chrono::nanoseconds retention) {
  std::lock_guard lock(mutex_);
  retention_ = retention;
}

void MetricsExporter::set_max_targets(std::size_t max_targets) {
  std::lock_guard lock(mutex_);
  targets_->set_max_targets(max_targets);
  globals_->max_targets->Set(static_cast<double>(max_targets));
}

TargetState& MetricsExporter::target_state(std::string_view key, const prometheus::Labels& labels) {
  const std::size_t folded_before = targets_->folded_count();
  TargetState& state = targets_->target(key, labels);
  const std::size_t folded = targets_->folded_count();
  if (folded != folded_before) {
    globals_->targets_folded->Set(static_cast<double>(folded));
    // Loud at the first fold, then at each doubling: never silent, never one line per target.
    if ((folded & (folded - 1)) == 0) {
      log::warning("metrics.targets_folded", {{"folded", folded},
                                              {"max_targets", targets_->max_targets()},
                                              {"latest", std::string(key)},
                                              {"hint", "raise metrics.max_targets"}});
    }
  }
  return state;
}

void MetricsExporter::retire_target(const TargetRef& target, Instant now) {
  std::lock_guard lock(mutex_);
  TargetState* t = targets_->find(target_key(target));
  if (t == nullptr) {
    targets_->forget_folded(target_key(target));
    globals_->targets_folded->Set(static_cast<double>(targets_->folded_count()));
    return;
  }
  // Not sampled any more: no current value. An exited target keeps up 0 and exited 1 until
  // the retention ends; one that is merely no longer watched has no state to claim.
  remove_readings(*t);
  if (!t->exited) {
    targets_->remove_metric(*t, &families_->target_up);
    for (const char* reason : kKnownDegradedReasons) {
      targets_->remove_metric(*t, &families_->target_degraded, {{"reason", reason}});
    }
    if (!t->degraded_reason.empty()) {
      targets_->remove_metric(*t, &families_->target_degraded, {{"reason", t->degraded_reason}});
    }
  }
  targets_->retire(target_key(target), now.monotonic);
  // The job's admission series go with its runs (a new admission brings them back).
  targets_->retire(admission_key(target.job), now.monotonic);
}

std::size_t MetricsExporter::sweep(Instant now) {
  std::lock_guard lock(mutex_);
  return targets_->sweep(now.monotonic, retention_);
}

bool MetricsExporter::has_target(std::string_view run_id) const {
  std::lock_guard lock(mutex_);
  return targets_->has_target(run_id);
}

}  // namespace ramguard
