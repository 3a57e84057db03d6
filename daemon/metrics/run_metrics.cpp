#include "metrics/run_metrics.hpp"

namespace ramguard {

void RunMetrics::target_reading(const TargetRef& target, const MemoryReading& reading,
                                std::uint64_t peak_bytes, bool peak_exact,
                                const ReadTiming& timing) {
  exporter_.observe_sample(target, reading, peak_bytes, peak_exact, timing);
}

void RunMetrics::target_state(const TargetRef& target, bool readable, std::string_view reason) {
  exporter_.set_target_up(target, readable, reason);
}

void RunMetrics::target_retired(const TargetRef& target, Instant now) {
  exporter_.retire_target(target, now);
}

Status RunMetrics::marked(const RunLedger& ledger, const MarkRecord& /*mark*/,
                          const PhaseRecord* phase, const BoundaryRecord* boundary) {
  if (phase != nullptr && phase->end) {
    exporter_.observe_phase(target_ref(ledger), phase->phase, phase->peak_bytes,
                            seconds_between(phase->begin, *phase->end));
  }
  if (boundary != nullptr) {
    exporter_.observe_boundary(target_ref(ledger), boundary->round, boundary->reading.rss_bytes,
                               boundary->reading.rss_bytes, boundary->counted_floor_bytes());
    if (boundary->allocator) {
      exporter_.observe_allocator(target_ref(ledger), boundary->allocator->allocated_bytes,
                                  boundary->allocator->retained_bytes);
    }
  }
  return ok_status();
}

Status RunMetrics::run_started(const RunLedger& ledger) {
  exporter_.observe_scope(target_ref(ledger), scope_name(ledger.info.scope));
  return ok_status();
}

Status RunMetrics::boundary_settled(const RunLedger& ledger, const BoundaryRecord& boundary) {
  exporter_.observe_boundary(target_ref(ledger), boundary.round, boundary.reading.rss_bytes,
                             boundary.floor_bytes, boundary.counted_floor_bytes());
  return ok_status();
}

Status RunMetrics::verdict(const RunLedger& ledger, const Verdict& verdict) {
  exporter_.observe_verdict(target_ref(ledger), verdict);
  return ok_status();
}

void RunMetrics::phase_gap(const RunLedger& ledger, std::string_view rule, double seconds) {
  exporter_.observe_gap(target_ref(ledger), rule, seconds);
}

Status RunMetrics::run_finished(const RunLedger& ledger, const std::vector<const PhaseRecord*>&) {
  exporter_.run_finished(target_ref(ledger));
  // As the ledger's calibration counts them: ended runs with a peak (an exited or lost run
  // stopped early and would under-estimate).
  if (ledger.state == RunState::kEnded && ledger.peak_bytes > 0) {
    exporter_.observe_job_run(ledger.info.job, ledger.info.owner_uid, ledger.peak_bytes,
                              ledger.info.estimate_bytes);
  }
  return ok_status();
}

void RunMetrics::runs_active(std::size_t count,
                             const std::map<std::uint32_t, std::uint64_t>& by_owner) {
  exporter_.set_runs_active(count);
  exporter_.set_user_active_runs(by_owner);
}

void RunMetrics::admission_decided(const AdmitAsk& ask, const AdmitOutcome& outcome) {
  const Decision& d = outcome.decision;
  exporter_.observe_admission(ask.job.empty() ? "default" : ask.job, outcome.owner_uid, d.admitted,
                              d.headroom_bytes);
  exporter_.set_admission_caps(d.effective_budget_bytes, d.node_cap_bytes.value_or(0),
                               d.cgroup_limit_bytes.value_or(0), d.committed_bytes,
                               d.admitted ? "" : cap_name(d.binding_cap));
}

void RunMetrics::run_refused(std::string_view cap, std::uint32_t /*owner_uid*/) {
  exporter_.observe_run_refusal(cap);
}

Status RunMetrics::reservations(const std::vector<Reservation>& rows,
                                std::uint64_t reserved_bytes) {
  exporter_.set_reserved_bytes(reserved_bytes);
  std::map<std::uint32_t, std::uint64_t> by_owner;
  for (const Reservation& r : rows) by_owner[r.owner_uid] += r.bytes;
  exporter_.set_user_reserved_bytes(by_owner);
  return ok_status();
}

}  // namespace ramguard
