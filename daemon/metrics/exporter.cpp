#include "metrics/exporter.hpp"

#include <prometheus/exposer.h>
#include <prometheus/registry.h>

#include <algorithm>
#include <exception>

#include "metrics/families.hpp"
#include "metrics/job_series.hpp"
#include "metrics/listen_address.hpp"
#include "metrics/self_stats.hpp"
#include "runs/watch_list.hpp"

namespace ramguard {

// Series without a job label, created on first use so nothing is exported before it is known.
struct GlobalSeries {
  prometheus::Gauge* budget = nullptr;
  prometheus::Gauge* margin = nullptr;
  prometheus::Gauge* reserved = nullptr;
  prometheus::Gauge* runs_active = nullptr;
  prometheus::Gauge* store_available = nullptr;
  prometheus::Gauge* store_writable = nullptr;
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
      jobs_(std::make_unique<JobSeries>()),
      globals_(std::make_unique<GlobalSeries>()) {
  families_->build_info.Add({{"version", RAMGUARD_VERSION}}).Set(1);
  global(globals_->runs_active, families_->runs_active).Set(0);
  global(globals_->reserved, families_->reserved_bytes).Set(0);
  // Present from the first scrape: an alert on 0 must not wait for the first failure.
  global(globals_->store_available, families_->store_available).Set(0);
  global(globals_->store_writable, families_->store_writable).Set(0);
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

void MetricsExporter::observe_reading(std::string_view job_name, const MemoryReading& reading) {
  std::lock_guard lock(mutex_);
  JobState& job = jobs_->job(job_name);
  if (job.rss == nullptr) {
    job.rss = &jobs_->metric(job, families_->target_rss_bytes);
    job.anon = &jobs_->metric(job, families_->target_memory_bytes, {{"kind", "anon"}});
    job.file = &jobs_->metric(job, families_->target_memory_bytes, {{"kind", "file"}});
    job.shmem = &jobs_->metric(job, families_->target_memory_bytes, {{"kind", "shmem"}});
    job.last_reading = &jobs_->metric(job, families_->target_last_reading_timestamp_seconds);
  }
  job.rss->Set(bytes(reading.rss_bytes));
  job.anon->Set(bytes(reading.anon_bytes));
  if (reading.source == ReadingSource::kMark) {
    job.last_shmem_bytes = reading.shmem_bytes;
    job.file->Set(bytes(reading.file_bytes));
    jobs_->metric(job, families_->target_swap_bytes).Set(bytes(reading.swap_bytes));
  } else {
    // statm's shared pages are file + shmem: split with the shmem of the last mark, so the
    // three kinds still add up to RSS.
    const std::uint64_t shmem = std::min(job.last_shmem_bytes, reading.file_bytes);
    job.file->Set(bytes(reading.file_bytes - shmem));
  }
  job.shmem->Set(bytes(reading.source == ReadingSource::kMark
                           ? reading.shmem_bytes
                           : std::min(job.last_shmem_bytes, reading.file_bytes)));
  job.last_reading->Set(std::chrono::duration<double>(reading.at.wall).count());
}

void MetricsExporter::observe_peak(std::string_view job_name, std::uint64_t peak_bytes,
                                   bool exact) {
  std::lock_guard lock(mutex_);
  JobState& job = jobs_->job(job_name);
  const double peak = bytes(peak_bytes);
  auto& exact_gauge = jobs_->metric(job, families_->target_peak_exact);
  if (peak > job.peak_bytes) {
    job.peak_bytes = peak;
    jobs_->metric(job, families_->target_peak_bytes).Set(peak);
    exact_gauge.Set(exact ? 1 : 0);
  } else if (peak == job.peak_bytes && exact) {
    exact_gauge.Set(1);  // the same peak, now confirmed by the high-water mark
  }
}

void MetricsExporter::set_target_up(std::string_view job_name, bool readable,
                                    std::string_view degraded_reason) {
  std::lock_guard lock(mutex_);
  JobState& job = jobs_->job(job_name);
  jobs_->metric(job, families_->target_up).Set(readable ? 1 : 0);
  const std::string reason = degraded_reason.empty()
                                 ? std::string()
                                 : jobs_->bounded_value(job, "reason", degraded_reason);
  if (reason == job.degraded_reason) return;
  if (!job.degraded_reason.empty()) {
    jobs_->remove_metric(job, &families_->target_degraded, {{"reason", job.degraded_reason}});
  }
  job.degraded_reason = reason;
  if (!reason.empty()) jobs_->metric(job, families_->target_degraded, {{"reason", reason}}).Set(1);
}

void MetricsExporter::observe_phase(std::string_view job_name, std::string_view phase,
                                    std::uint64_t peak_bytes, double duration_seconds) {
  std::lock_guard lock(mutex_);
  JobState& job = jobs_->job(job_name);
  const prometheus::Labels labels{{"phase", jobs_->bounded_value(job, "phase", phase)}};
  jobs_->metric(job, families_->phase_peak_bytes, labels).Set(bytes(peak_bytes));
  jobs_->metric(job, families_->phase_duration_seconds, labels).Set(duration_seconds);
}

void MetricsExporter::observe_boundary(std::string_view job_name, std::uint32_t round,
                                       std::uint64_t rss_bytes, std::uint64_t floor_bytes) {
  std::lock_guard lock(mutex_);
  JobState& job = jobs_->job(job_name);
  jobs_->metric(job, families_->boundary_round).Set(round);
  jobs_->metric(job, families_->boundary_rss_bytes).Set(bytes(rss_bytes));
  jobs_->metric(job, families_->boundary_floor_bytes).Set(bytes(floor_bytes));
}

void MetricsExporter::observe_gap(std::string_view job_name, std::string_view from_to,
                                  double seconds) {
  std::lock_guard lock(mutex_);
  JobState& job = jobs_->job(job_name);
  jobs_
      ->metric(job, families_->phase_gap_seconds,
               {{"gap", jobs_->bounded_value(job, "gap", from_to)}})
      .Set(seconds);
}

void MetricsExporter::observe_admission(std::string_view job_name, bool admitted,
                                        std::int64_t headroom_bytes) {
  std::lock_guard lock(mutex_);
  JobState& job = jobs_->job(job_name);
  jobs_->metric(job, families_->admissions_total, {{"decision", admitted ? "admitted" : "refused"}})
      .Increment();
  jobs_->metric(job, families_->admission_headroom_bytes).Set(static_cast<double>(headroom_bytes));
}

void MetricsExporter::observe_verdict(std::string_view job_name, std::string_view kind,
                                      Severity severity) {
  std::lock_guard lock(mutex_);
  JobState& job = jobs_->job(job_name);
  jobs_
      ->metric(job, families_->verdicts_total,
               {{"kind", jobs_->bounded_value(job, "kind", kind)},
                {"severity", severity_name(severity)}})
      .Increment();
}

void MetricsExporter::set_active_warning(std::string_view job_name, std::string_view kind,
                                         bool active) {
  std::lock_guard lock(mutex_);
  JobState& job = jobs_->job(job_name);
  jobs_->metric(job, families_->verdict_active, {{"kind", jobs_->bounded_value(job, "kind", kind)}})
      .Set(active ? 1 : 0);
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

void MetricsExporter::retire_job(std::string_view job, Instant now) {
  std::lock_guard lock(mutex_);
  jobs_->retire(job, now.monotonic);
}

std::size_t MetricsExporter::sweep(Instant now) {
  std::lock_guard lock(mutex_);
  return jobs_->sweep(now.monotonic, retention_);
}

bool MetricsExporter::has_job(std::string_view job) const {
  std::lock_guard lock(mutex_);
  return jobs_->has_job(job);
}

}  // namespace ramguard
