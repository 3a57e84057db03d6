#include "metrics/run_metrics.hpp"

namespace ramguard {

void RunMetrics::target_reading(std::string_view job, const MemoryReading& reading,
                                std::uint64_t peak_bytes, bool peak_exact) {
  exporter_.observe_reading(job, reading);
  exporter_.observe_peak(job, peak_bytes, peak_exact);
}

void RunMetrics::target_state(std::string_view job, bool readable, std::string_view reason) {
  exporter_.set_target_up(job, readable, reason);
}

void RunMetrics::target_retired(std::string_view job, Instant now) {
  exporter_.retire_job(job, now);
}

Status RunMetrics::marked(const RunLedger& ledger, const MarkRecord& /*mark*/,
                          const PhaseRecord* phase, const BoundaryRecord* boundary) {
  if (phase != nullptr && phase->end) {
    exporter_.observe_phase(ledger.info.job, phase->phase, phase->peak_bytes,
                            seconds_between(phase->begin, *phase->end));
  }
  if (boundary != nullptr) {
    exporter_.observe_boundary(ledger.info.job, boundary->round, boundary->reading.rss_bytes,
                               boundary->reading.rss_bytes);
  }
  return ok_status();
}

Status RunMetrics::boundary_settled(const RunLedger& ledger, const BoundaryRecord& boundary) {
  exporter_.observe_boundary(ledger.info.job, boundary.round, boundary.reading.rss_bytes,
                             boundary.floor_bytes);
  return ok_status();
}

Status RunMetrics::verdict(const RunLedger& ledger, const Verdict& verdict) {
  exporter_.observe_verdict(ledger.info.job, verdict.kind, verdict.severity);
  if (verdict.severity != Severity::kInfo || verdict.cleared) {
    exporter_.set_active_warning(ledger.info.job, verdict.kind,
                                 !verdict.cleared && !verdict.passed);
  }
  return ok_status();
}

void RunMetrics::phase_gap(const RunLedger& ledger, std::string_view rule, double seconds) {
  exporter_.observe_gap(ledger.info.job, rule, seconds);
}

void RunMetrics::runs_active(std::size_t count) {
  exporter_.set_runs_active(count);
}

Status RunMetrics::reservations(const std::vector<ReservationRow>&, std::uint64_t reserved_bytes) {
  exporter_.set_reserved_bytes(reserved_bytes);
  return ok_status();
}

}  // namespace ramguard
