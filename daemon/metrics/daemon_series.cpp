#include "metrics/daemon_series.hpp"

#include <chrono>
#include <string>

#include "admission/admission.hpp"
#include "metrics/families.hpp"
#include "metrics/self_stats.hpp"

namespace ramguard {

namespace {

prometheus::Gauge& global(prometheus::Gauge*& slot, prometheus::Family<prometheus::Gauge>& fam) {
  if (slot == nullptr) slot = &fam.Add({});
  return *slot;
}

double bytes(std::uint64_t value) {
  return static_cast<double>(value);
}

}  // namespace

DaemonSeries::DaemonSeries(MetricFamilies& families)
    : families_(families),
      user_reserved_(families.user_reserved_bytes),
      user_runs_(families.user_active_runs) {
  families_.build_info.Add({{"version", RAMGUARD_VERSION}}).Set(1);
  families_.start_time_seconds.Add({}).Set(
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  global(runs_active_, families_.runs_active).Set(0);
  global(reserved_, families_.reserved_bytes).Set(0);
  // Present from the first scrape: an alert on 0 must not wait for the first failure.
  global(store_available_, families_.store_available).Set(0);
  global(store_writable_, families_.store_writable).Set(0);
  global(journal_writes_, families_.store_journal_writes).Set(0);
  global(journal_max_writes_, families_.store_journal_max_writes).Set(0);
  journal_dropped_ = &families_.store_journal_dropped.Add({});
  sample_duration_ = &families_.sample_duration_seconds.Add({}, sample_duration_buckets());
}

void DaemonSeries::set_budget(std::uint64_t budget_bytes, std::uint64_t margin_bytes) {
  global(budget_, families_.budget_bytes).Set(bytes(budget_bytes));
  global(margin_, families_.budget_margin_bytes).Set(bytes(margin_bytes));
}

void DaemonSeries::set_reserved_bytes(std::uint64_t total_bytes) {
  global(reserved_, families_.reserved_bytes).Set(bytes(total_bytes));
}

void DaemonSeries::observe_decision(const Decision& d) {
  const std::uint64_t values[3] = {d.effective_budget_bytes, d.node_cap_bytes.value_or(0),
                                   d.cgroup_limit_bytes.value_or(0)};
  const char* names[3] = {"effective", "node", "cgroup"};
  for (int i = 0; i < 3; ++i) {
    if (caps_[i] == nullptr) caps_[i] = &families_.admission_cap_bytes.Add({{"cap", names[i]}});
    caps_[i]->Set(bytes(values[i]));
  }
  global(committed_, families_.admission_committed_bytes).Set(bytes(d.committed_bytes));
  if (!d.admitted) {
    families_.admission_refusals_by_cap.Add({{"cap", cap_name(d.binding_cap)}}).Increment();
  }
}

void DaemonSeries::observe_run_refusal(std::string_view cap) {
  families_.run_refusals_by_cap.Add({{"cap", std::string(cap)}}).Increment();
}

void DaemonSeries::set_runs_active(std::size_t runs) {
  global(runs_active_, families_.runs_active).Set(static_cast<double>(runs));
}

void DaemonSeries::set_user_reserved_bytes(const std::map<std::uint32_t, std::uint64_t>& by_uid) {
  user_reserved_.set(by_uid);
}

void DaemonSeries::set_user_active_runs(const std::map<std::uint32_t, std::uint64_t>& by_uid) {
  user_runs_.set(by_uid);
}

void DaemonSeries::set_store_available(bool available) {
  global(store_available_, families_.store_available).Set(available ? 1 : 0);
}

void DaemonSeries::set_store_writable(bool writable) {
  global(store_writable_, families_.store_writable).Set(writable ? 1 : 0);
}

void DaemonSeries::set_store_journal(std::size_t writes, std::size_t max_writes,
                                     std::uint64_t dropped_total) {
  global(journal_writes_, families_.store_journal_writes).Set(static_cast<double>(writes));
  global(journal_max_writes_, families_.store_journal_max_writes)
      .Set(static_cast<double>(max_writes));
  const double seen = journal_dropped_->Value();
  if (static_cast<double>(dropped_total) > seen) {
    journal_dropped_->Increment(static_cast<double>(dropped_total) - seen);
  }
}

void DaemonSeries::observe_sample_duration(double seconds) {
  sample_duration_->Observe(seconds);
}

Status DaemonSeries::update_self(const std::filesystem::path& proc_self_statm) {
  auto rss = read_statm_rss_bytes(proc_self_statm);
  if (const auto jemalloc = read_jemalloc_stats()) {
    global(jemalloc_[0], families_.jemalloc_allocated_bytes).Set(bytes(jemalloc->allocated_bytes));
    global(jemalloc_[1], families_.jemalloc_active_bytes).Set(bytes(jemalloc->active_bytes));
    global(jemalloc_[2], families_.jemalloc_resident_bytes).Set(bytes(jemalloc->resident_bytes));
    global(jemalloc_[3], families_.jemalloc_retained_bytes).Set(bytes(jemalloc->retained_bytes));
  }
  if (!rss) return Error{"own memory: " + rss.error().message};
  global(self_rss_, families_.self_rss_bytes).Set(bytes(*rss));
  return ok_status();
}

}  // namespace ramguard
