#include "metrics/exporter.hpp"

#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <map>
#include <sstream>

#include "common/log.hpp"
#include "metrics/families.hpp"
#include "metrics/http_server.hpp"
#include "metrics/listen_probe.hpp"
#include "metrics/self_stats.hpp"
#include "metrics/target_scrape.hpp"
#include "metrics/target_series.hpp"
#include "metrics/user_shares.hpp"
#include "ramguard/base/verdict_rank.hpp"
#include "runs/watch_list.hpp"

namespace ramguard {

// Series without target labels, created on first use so nothing is exported before it is known.
struct GlobalSeries {
  prometheus::Gauge* budget = nullptr;
  prometheus::Gauge* margin = nullptr;
  prometheus::Gauge* reserved = nullptr;
  prometheus::Gauge* caps[3] = {nullptr, nullptr, nullptr};  // effective, node, cgroup
  prometheus::Gauge* committed = nullptr;
  prometheus::Gauge* runs_active = nullptr;
  prometheus::Gauge* store_available = nullptr;
  prometheus::Gauge* store_writable = nullptr;
  prometheus::Gauge* journal_writes = nullptr;
  prometheus::Gauge* journal_max_writes = nullptr;
  prometheus::Counter* journal_dropped = nullptr;
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
      globals_(std::make_unique<GlobalSeries>()),
      user_reserved_(std::make_unique<UserShareSeries>(families_->user_reserved_bytes)),
      user_runs_(std::make_unique<UserShareSeries>(families_->user_active_runs)) {
  families_->build_info.Add({{"version", RAMGUARD_VERSION}}).Set(1);
  families_->start_time_seconds.Add({}).Set(
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  global(globals_->runs_active, families_->runs_active).Set(0);
  global(globals_->reserved, families_->reserved_bytes).Set(0);
  // Present from the first scrape: an alert on 0 must not wait for the first failure.
  global(globals_->store_available, families_->store_available).Set(0);
  global(globals_->store_writable, families_->store_writable).Set(0);
  global(globals_->journal_writes, families_->store_journal_writes).Set(0);
  global(globals_->journal_max_writes, families_->store_journal_max_writes).Set(0);
  globals_->journal_dropped = &families_->store_journal_dropped.Add({});
  global(globals_->max_targets, families_->max_targets)
      .Set(static_cast<double>(targets_->max_targets()));
  global(globals_->targets_folded, families_->targets_folded).Set(0);
  globals_->sample_duration =
      &families_->sample_duration_seconds.Add({}, sample_duration_buckets());
}

MetricsExporter::~MetricsExporter() {
  // Stop serving before the registry and families go away.
  server_.reset();
}

Result<std::unique_ptr<MetricsExporter>> MetricsExporter::start(const Endpoint& address) {
  std::unique_ptr<MetricsExporter> exporter(new MetricsExporter());
  MetricsExporter* self = exporter.get();
  auto server = MetricsHttpServer::start(
      address.to_string(), [self](std::string& out, const MetricsHttpServer::Flush& flush) {
        self->render(out, flush);
      });
  if (!server) {
    // civetweb only says it could not start; a probe bind says why.
    std::string why = probe_listen_error(address);
    if (why.empty()) why = server.error().message;
    return Error{"metrics address '" + address.to_string() + "': cannot listen: " + why};
  }
  exporter->server_ = std::move(*server);
  return exporter;
}

std::uint16_t MetricsExporter::port() const {
  return server_->port();
}

void MetricsExporter::render(std::string& out,
                             const std::function<void(std::string&)>& flush) const {
  // The daemon-wide families are few: prometheus-cpp's serializer is fine for them.
  std::ostringstream globals;
  prometheus::TextSerializer().Serialize(globals, registry_->Collect());
  out += globals.view();
  // Kept by the log itself (common/log.hpp), which no lock of ours guards.
  out +=
      "# HELP ramguard_log_lines_suppressed_total Log lines caused by clients' requests that "
      "their user's log rate limit dropped\n"
      "# TYPE ramguard_log_lines_suppressed_total counter\n"
      "ramguard_log_lines_suppressed_total " +
      std::to_string(log::lines_suppressed_total()) + "\n";
  // The targets' series are copied under the lock, then written and sent without it (a slow
  // reader must not stall sampling).
  TargetScrape scrape;
  {
    std::lock_guard lock(mutex_);
    targets_->copy_to(scrape);
  }
  constexpr std::size_t kFlushBytes = 64 * 1024;
  for (std::size_t f = 0; f < kTargetFamilyCount; ++f) {
    scrape.write_family(static_cast<TargetFamily>(f), out);
    if (out.size() >= kFlushBytes) flush(out);
  }
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

void MetricsExporter::set_admission_caps(std::uint64_t effective_bytes,
                                         std::uint64_t node_cap_bytes,
                                         std::uint64_t cgroup_limit_bytes,
                                         std::uint64_t committed_bytes,
                                         std::string_view refused_by) {
  std::lock_guard lock(mutex_);
  const std::uint64_t values[3] = {effective_bytes, node_cap_bytes, cgroup_limit_bytes};
  const char* names[3] = {"effective", "node", "cgroup"};
  for (int i = 0; i < 3; ++i) {
    if (globals_->caps[i] == nullptr) {
      globals_->caps[i] = &families_->admission_cap_bytes.Add({{"cap", names[i]}});
    }
    globals_->caps[i]->Set(bytes(values[i]));
  }
  global(globals_->committed, families_->admission_committed_bytes).Set(bytes(committed_bytes));
  if (!refused_by.empty()) {
    families_->admission_refusals_by_cap.Add({{"cap", std::string(refused_by)}}).Increment();
  }
}

void MetricsExporter::observe_run_refusal(std::string_view cap) {
  std::lock_guard lock(mutex_);
  families_->run_refusals_by_cap.Add({{"cap", std::string(cap)}}).Increment();
}

void MetricsExporter::set_runs_active(std::size_t runs) {
  std::lock_guard lock(mutex_);
  global(globals_->runs_active, families_->runs_active).Set(static_cast<double>(runs));
}

void MetricsExporter::set_user_reserved_bytes(
    const std::map<std::uint32_t, std::uint64_t>& by_uid) {
  std::lock_guard lock(mutex_);
  user_reserved_->set(by_uid);
}

void MetricsExporter::set_user_active_runs(const std::map<std::uint32_t, std::uint64_t>& by_uid) {
  std::lock_guard lock(mutex_);
  user_runs_->set(by_uid);
}

void MetricsExporter::set_store_available(bool available) {
  std::lock_guard lock(mutex_);
  global(globals_->store_available, families_->store_available).Set(available ? 1 : 0);
}

void MetricsExporter::set_store_writable(bool writable) {
  std::lock_guard lock(mutex_);
  global(globals_->store_writable, families_->store_writable).Set(writable ? 1 : 0);
}

void MetricsExporter::set_store_journal(std::size_t writes, std::size_t max_writes,
                                        std::uint64_t dropped_total) {
  std::lock_guard lock(mutex_);
  global(globals_->journal_writes, families_->store_journal_writes)
      .Set(static_cast<double>(writes));
  global(globals_->journal_max_writes, families_->store_journal_max_writes)
      .Set(static_cast<double>(max_writes));
  const double seen = globals_->journal_dropped->Value();
  if (static_cast<double>(dropped_total) > seen) {
    globals_->journal_dropped->Increment(static_cast<double>(dropped_total) - seen);
  }
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
  // The periodic path: one lookup, no allocation.
  if (TargetState* known = targets_->find(target.run_id); known != nullptr && known->state_series)
    return *known;
  // A watched PID's "job" is its "pid-N" (its run_id too): no job name to hide, kept plain.
  const bool watched = target.job == target.run_id;
  Labels labels{{kJobLabel, watched ? std::string(target.job) : job_label(target.job, job_names_)},
                {kRunLabel, std::string(target.run_id)}};
  TargetState& state = target_state(target_key(target), labels, target.owner_uid);
  if (!state.state_series) {
    state.state_series = true;
    targets_->metric(state, TargetFamily::kUp) = 1;
    targets_->metric(state, TargetFamily::kExited) = 0;
    for (const char* reason : kKnownDegradedReasons) {
      targets_->metric(state, TargetFamily::kDegraded, {{"reason", reason}}) = 0;
    }
    if (is_run(target)) clear_warnings(state);
  }
  return state;
}

void MetricsExporter::remove_readings(TargetState& state) {
  targets_->remove_metric(state, TargetFamily::kRssBytes);
  for (const char* kind : {"anon", "file", "shmem"}) {
    targets_->remove_metric(state, TargetFamily::kMemoryBytes, {{"kind", kind}});
  }
  if (state.kernel_series) {
    targets_->remove_metric(state, TargetFamily::kMemoryBytes, {{"kind", "kernel"}});
    state.kernel_series = false;
  }
  targets_->remove_metric(state, TargetFamily::kSwapBytes);
  targets_->remove_metric(state, TargetFamily::kCountedBytes);
  targets_->remove_metric(state, TargetFamily::kLastReadingTimestampSeconds);
  targets_->remove_metric(state, TargetFamily::kReadSeconds);
  if (state.pss_read_seconds != 0) {
    targets_->remove_metric(state, TargetFamily::kPssReadSeconds);
    state.pss_read_seconds = 0;
  }
}

void MetricsExporter::set_degraded(TargetState& state, const std::string& reason) {
  if (reason == state.degraded_reason) return;
  if (!state.degraded_reason.empty()) {
    targets_->metric(state, TargetFamily::kDegraded, {{"reason", state.degraded_reason}}) = 0;
  }
  state.degraded_reason = reason;
  if (!reason.empty()) {
    targets_->metric(state, TargetFamily::kDegraded, {{"reason", reason}}) = 1;
  }
}

void MetricsExporter::observe_reading(const TargetRef& target, const MemoryReading& reading) {
  std::lock_guard lock(mutex_);
  set_reading(state_of(target), reading);
}

void MetricsExporter::observe_peak(const TargetRef& target, std::uint64_t peak_bytes, bool exact) {
  std::lock_guard lock(mutex_);
  set_peak(state_of(target), peak_bytes, exact);
}

void MetricsExporter::observe_sample(const TargetRef& target, const MemoryReading& reading,
                                     std::uint64_t peak_bytes, bool exact,
                                     const ReadTiming& timing) {
  std::lock_guard lock(mutex_);
  TargetState& t = state_of(target);
  set_reading(t, reading);
  set_peak(t, peak_bytes, exact);
  set_timing(t, timing);
}

void MetricsExporter::set_timing(TargetState& t, const ReadTiming& timing) {
  if (t.exited) return;
  TargetSeries::hot(t, HotSeries::kReadSeconds) = timing.last_seconds;
  // A counter never goes back, even in "other", which folded targets share.
  double& slow = TargetSeries::hot(t, HotSeries::kSlowReads);
  slow = std::max(slow, static_cast<double>(timing.slow_reads));
  // A new PSS sum comes once a round: only then the (allocating) series lookup.
  if (timing.last_pss_seconds != t.pss_read_seconds) {
    t.pss_read_seconds = timing.last_pss_seconds;
    targets_->metric(t, TargetFamily::kPssReadSeconds) = timing.last_pss_seconds;
  }
}

void MetricsExporter::set_reading(TargetState& t, const MemoryReading& reading) {
  if (t.exited) return;  // a dead process has no current value
  if (!t.readable) {
    // A reading proves the process readable again.
    t.readable = true;
    targets_->metric(t, TargetFamily::kUp) = 1;
    if (t.degraded_reason == "unreadable") set_degraded(t, "");
  }
  TargetSeries::hot(t, HotSeries::kRss) = bytes(reading.rss_bytes);
  TargetSeries::hot(t, HotSeries::kAnon) = bytes(reading.anon_bytes);
  // Every reading, periodic or at a mark, splits file, shmem and swap the same way (status or
  // memory.stat): the series say what the reading says.
  TargetSeries::hot(t, HotSeries::kFile) = bytes(reading.file_bytes);
  TargetSeries::hot(t, HotSeries::kShmem) = bytes(reading.shmem_bytes);
  TargetSeries::hot(t, HotSeries::kSwap) = bytes(reading.swap_bytes);
  // The figure the verdicts judge, as they read it.
  TargetSeries::hot(t, HotSeries::kCounted) = bytes(reading.counted_bytes());
  // Only cgroups have kernel memory to show: no zero series for every process.
  if (reading.kernel_bytes > 0 || t.kernel_series) {
    t.kernel_series = true;
    TargetSeries::hot(t, HotSeries::kKernel) = bytes(reading.kernel_bytes);
  }
  TargetSeries::hot(t, HotSeries::kLastReading) =
      std::chrono::duration<double>(reading.at.wall).count();
}

void MetricsExporter::set_peak(TargetState& t, std::uint64_t peak_bytes, bool exact) {
  const double peak = bytes(peak_bytes);
  double& peak_gauge = TargetSeries::hot(t, HotSeries::kPeak);
  double& exact_gauge = TargetSeries::hot(t, HotSeries::kPeakExact);
  if (peak > t.peak_bytes) {
    t.peak_bytes = peak;
    peak_gauge = peak;
    exact_gauge = exact ? 1 : 0;
  } else if (peak == t.peak_bytes && exact) {
    exact_gauge = 1;  // the same peak, now confirmed by the high-water mark
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
    targets_->metric(t, TargetFamily::kUp) = 0;
    targets_->metric(t, TargetFamily::kExited) = 1;
    set_degraded(t, "");
    remove_readings(t);
    // A dead process holds no warning: only the verdict counters remember.
    if (is_run(target)) clear_warnings(t);
    return;
  }
  if (t.exited) return;
  t.readable = readable;
  targets_->metric(t, TargetFamily::kUp) = readable ? 1 : 0;
  set_degraded(t, reason.empty() ? std::string() : targets_->bounded_value(t, "reason", reason));
}

void MetricsExporter::observe_phase(const TargetRef& target, std::string_view phase,
                                    std::uint64_t peak_bytes, double duration_seconds) {
  std::lock_guard lock(mutex_);
  TargetState& t = state_of(target);
  const Labels labels{{"phase", targets_->bounded_value(t, "phase", phase)}};
  targets_->metric(t, TargetFamily::kPhasePeakBytes, labels) = bytes(peak_bytes);
  targets_->metric(t, TargetFamily::kPhaseDurationSeconds, labels) = duration_seconds;
}

void MetricsExporter::observe_boundary(const TargetRef& target, std::uint32_t round,
                                       std::uint64_t rss_bytes, std::uint64_t floor_bytes,
                                       std::uint64_t counted_floor_bytes) {
  std::lock_guard lock(mutex_);
  TargetState& t = state_of(target);
  targets_->metric(t, TargetFamily::kBoundaryRound) = round;
  targets_->metric(t, TargetFamily::kBoundaryRssBytes) = bytes(rss_bytes);
  targets_->metric(t, TargetFamily::kBoundaryFloorBytes) = bytes(floor_bytes);
  targets_->metric(t, TargetFamily::kBoundaryCountedFloorBytes) = bytes(counted_floor_bytes);
}

void MetricsExporter::observe_scope(const TargetRef& target, std::string_view scope) {
  std::lock_guard lock(mutex_);
  TargetState& t = state_of(target);
  targets_->metric(t, TargetFamily::kScopeInfo, {{"scope", std::string(scope)}}) = 1;
}

void MetricsExporter::observe_allocator(const TargetRef& target, std::uint64_t live_bytes,
                                        std::uint64_t free_bytes) {
  std::lock_guard lock(mutex_);
  TargetState& t = state_of(target);
  targets_->metric(t, TargetFamily::kBoundaryAllocatorLiveBytes) = bytes(live_bytes);
  targets_->metric(t, TargetFamily::kBoundaryAllocatorFreeBytes) = bytes(free_bytes);
}

void MetricsExporter::observe_gap(const TargetRef& target, std::string_view from_to,
                                  double seconds) {
  std::lock_guard lock(mutex_);
  TargetState& t = state_of(target);
  targets_->metric(t, TargetFamily::kPhaseGapSeconds,
                   {{"gap", targets_->bounded_value(t, "gap", from_to)}}) = seconds;
}

void MetricsExporter::observe_admission(std::string_view job, std::uint32_t owner_uid,
                                        bool admitted, std::int64_t headroom_bytes) {
  std::lock_guard lock(mutex_);
  TargetState& t =
      target_state(admission_key(job), {{kJobLabel, job_label(job, job_names_)}}, owner_uid);
  targets_->revive(t);
  targets_->metric(t, TargetFamily::kAdmissionsTotal,
                   {{"decision", admitted ? "admitted" : "refused"}}) += 1;
  targets_->metric(t, TargetFamily::kAdmissionHeadroomBytes) = static_cast<double>(headroom_bytes);
}

void MetricsExporter::observe_job_run(std::string_view job, std::uint32_t owner_uid,
                                      std::uint64_t peak_bytes, std::uint64_t estimate_bytes) {
  std::lock_guard lock(mutex_);
  TargetState& t =
      target_state(admission_key(job), {{kJobLabel, job_label(job, job_names_)}}, owner_uid);
  targets_->revive(t);
  const Labels uid = {{"uid", targets_->bounded_value(t, "uid", std::to_string(owner_uid))}};
  double& peak = targets_->metric(t, TargetFamily::kJobPeakBytes, uid);
  peak = std::max(peak, static_cast<double>(peak_bytes));
  targets_->metric(t, TargetFamily::kJobRuns, uid) += 1;
  if (estimate_bytes > 0) {
    targets_->metric(t, TargetFamily::kJobPeakEstimateRatio, uid) =
        static_cast<double>(peak_bytes) / static_cast<double>(estimate_bytes);
  }
}

void MetricsExporter::seed_job(std::string_view job, std::uint32_t owner_uid,
                               std::uint64_t peak_bytes, std::uint64_t runs, Instant now) {
  std::lock_guard lock(mutex_);
  TargetState& t =
      target_state(admission_key(job), {{kJobLabel, job_label(job, job_names_)}}, owner_uid);
  const Labels uid = {{"uid", targets_->bounded_value(t, "uid", std::to_string(owner_uid))}};
  double& peak = targets_->metric(t, TargetFamily::kJobPeakBytes, uid);
  peak = std::max(peak, static_cast<double>(peak_bytes));
  targets_->metric(t, TargetFamily::kJobRuns, uid) += static_cast<double>(runs);
  targets_->retire(admission_key(job), now.monotonic);
}

void MetricsExporter::observe_verdict(const TargetRef& target, const Verdict& verdict) {
  std::lock_guard lock(mutex_);
  TargetState& t = state_of(target);
  const std::string kind = targets_->bounded_value(t, "kind", verdict.kind);
  // A release either passed or failed: say so, as reports do, rather than a severity.
  const std::string severity =
      verdict.kind == verdict_kind::kRelease
          ? release_outcome(verdict.passed, severity_name(verdict.severity),
                            verdict.figures.contains("not_verified"))
          : severity_name(verdict.severity);
  targets_->metric(t, TargetFamily::kVerdictsTotal, {{"kind", kind}, {"severity", severity}}) += 1;
  const auto& kinds = warning_kinds();
  if (std::find(kinds.begin(), kinds.end(), verdict.kind) == kinds.end()) return;
  if (verdict.severity == Severity::kInfo && !verdict.cleared) return;
  const bool holds = !verdict.cleared && !verdict.passed && !t.finished && !t.exited;
  targets_->metric(t, TargetFamily::kVerdictActive, {{"kind", kind}}) = holds ? 1 : 0;
}

void MetricsExporter::run_finished(const TargetRef& target) {
  std::lock_guard lock(mutex_);
  TargetState& t = state_of(target);
  t.finished = true;
  clear_warnings(t);
}

void MetricsExporter::clear_warnings(TargetState& t) {
  for (const std::string& kind : warning_kinds()) {
    targets_->metric(t, TargetFamily::kVerdictActive, {{"kind", kind}}) = 0;
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

void MetricsExporter::set_job_names(JobNames job_names) {
  std::lock_guard lock(mutex_);
  job_names_ = job_names;
}

std::string MetricsExporter::job_label(std::string_view job, JobNames mode) {
  if (mode == JobNames::kPlain) return std::string(job);
  if (mode == JobNames::kOmit) return {};
  std::uint64_t hash = 14695981039346656037ULL;  // FNV-1a, 64 bits
  for (const char c : job) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 1099511628211ULL;
  }
  char text[16];
  std::snprintf(text, sizeof text, "h-%012llx",
                static_cast<unsigned long long>(hash >> 16));  // 48 bits: 12 hex digits
  return text;
}

void MetricsExporter::set_max_targets(std::size_t max_targets) {
  std::lock_guard lock(mutex_);
  targets_->set_max_targets(max_targets);
  globals_->max_targets->Set(static_cast<double>(max_targets));
}

void MetricsExporter::set_max_targets_per_user(std::size_t max_targets) {
  std::lock_guard lock(mutex_);
  targets_->set_max_targets_per_user(max_targets);
}

TargetState& MetricsExporter::target_state(std::string_view key, const Labels& labels,
                                           std::uint32_t owner_uid) {
  const std::size_t folded_before = targets_->folded_count();
  const bool by_owner = owner_uid != 0 && targets_->max_targets_per_user() != 0 &&
                        targets_->live_targets_of(owner_uid) >= targets_->max_targets_per_user();
  TargetState& state = targets_->target(key, labels, owner_uid);
  const std::size_t folded = targets_->folded_count();
  if (folded != folded_before) {
    globals_->targets_folded->Set(static_cast<double>(folded));
    // Loud at the first fold, then at each doubling: never silent, never one line per target.
    if ((folded & (folded - 1)) == 0) {
      // Bounded by the doubling, so not charged to the user whose request folded it: a flood of
      // its own lines must not hide this one.
      const log::PeerScope not_limited(owner_uid, "", /*limited=*/false);
      log::warning("metrics.targets_folded",
                   {{"folded", folded},
                    {"max_targets", targets_->max_targets()},
                    {"owner_uid", owner_uid},
                    {"owner_targets", targets_->live_targets_of(owner_uid)},
                    {"latest", std::string(key)},
                    {"hint", by_owner ? "raise metrics.max_targets_per_user"
                                      : "raise metrics.max_targets"}});
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
    targets_->remove_metric(*t, TargetFamily::kUp);
    for (const char* reason : kKnownDegradedReasons) {
      targets_->remove_metric(*t, TargetFamily::kDegraded, {{"reason", reason}});
    }
    if (!t->degraded_reason.empty()) {
      targets_->remove_metric(*t, TargetFamily::kDegraded, {{"reason", t->degraded_reason}});
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
