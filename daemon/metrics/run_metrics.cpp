#include "metrics/run_metrics.hpp"

namespace ramguard {

void RunMetrics::target_reading(const TargetRef& target, const MemoryReading& reading,
                                std::uint64_t peak_bytes, bool peak_exact,
                                const ReadTiming& timing) {
  exporter_.targets()->observe_sample(target, reading, peak_bytes, peak_exact, timing);
}

void RunMetrics::target_state(const TargetRef& target, bool readable, std::string_view reason) {
  exporter_.targets()->set_target_up(target, readable, reason);
}

void RunMetrics::target_retired(const TargetRef& target, Instant now) {
  exporter_.targets()->retire_target(target, now);
}

Status RunMetrics::marked(const RunLedger& ledger, const MarkRecord& /*mark*/,
                          const PhaseRecord* phase, const BoundaryRecord* boundary) {
  if (phase != nullptr) exporter_.targets()->observe_phase(target_ref(ledger), *phase);
  if (boundary != nullptr) exporter_.targets()->observe_boundary(target_ref(ledger), *boundary);
  return ok_status();
}

Status RunMetrics::run_started(const RunLedger& ledger) {
  exporter_.targets()->observe_scope(target_ref(ledger), scope_name(ledger.info.scope));
  return ok_status();
}

Status RunMetrics::boundary_settled(const RunLedger& ledger, const BoundaryRecord& boundary) {
  exporter_.targets()->observe_boundary(target_ref(ledger), boundary);
  return ok_status();
}

Status RunMetrics::verdict(const RunLedger& ledger, const Verdict& verdict) {
  exporter_.targets()->observe_verdict(target_ref(ledger), verdict);
  return ok_status();
}

void RunMetrics::phase_gap(const RunLedger& ledger, std::string_view rule, double seconds) {
  exporter_.targets()->observe_gap(target_ref(ledger), rule, seconds);
}

Status RunMetrics::run_finished(const RunLedger& ledger, const std::vector<const PhaseRecord*>&) {
  exporter_.targets()->run_finished(target_ref(ledger));
  exporter_.jobs()->observe_run(ledger);
  return ok_status();
}

void RunMetrics::runs_active(std::size_t count,
                             const std::map<std::uint32_t, std::uint64_t>& by_owner) {
  auto daemon = exporter_.daemon();
  daemon->set_runs_active(count);
  daemon->set_user_active_runs(by_owner);
}

void RunMetrics::admission_decided(const AdmitAsk& ask, const AdmitOutcome& outcome) {
  exporter_.jobs()->observe_admission(ask.job.empty() ? "default" : ask.job, outcome.owner_uid,
                                      outcome.decision);
  exporter_.daemon()->observe_decision(outcome.decision);
}

void RunMetrics::run_refused(std::string_view cap, std::uint32_t /*owner_uid*/) {
  exporter_.daemon()->observe_run_refusal(cap);
}

Status RunMetrics::reservations(const std::vector<Reservation>& rows,
                                std::uint64_t reserved_bytes) {
  std::map<std::uint32_t, std::uint64_t> by_owner;
  for (const Reservation& r : rows) by_owner[r.owner_uid] += r.bytes;
  auto daemon = exporter_.daemon();
  daemon->set_reserved_bytes(reserved_bytes);
  daemon->set_user_reserved_bytes(by_owner);
  return ok_status();
}

}  // namespace ramguard
