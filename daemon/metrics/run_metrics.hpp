#pragma once
// The exporter as runs see it: a RunObserver that turns run events into series. It only
// records what runs decided; it never changes a run.

#include "admission/desk.hpp"
#include "metrics/exporter.hpp"
#include "runs/observer.hpp"

namespace ramguard {

class RunMetrics final : public RunObserver, public AdmissionObserver {
 public:
  explicit RunMetrics(MetricsExporter& exporter) : exporter_(exporter) {}

  void target_reading(const TargetRef& target, const MemoryReading& reading,
                      std::uint64_t peak_bytes, bool peak_exact, const ReadTiming& timing) override;
  void target_state(const TargetRef& target, bool readable, std::string_view reason) override;
  void target_retired(const TargetRef& target, Instant now) override;
  Status marked(const RunLedger& ledger, const MarkRecord& mark, const PhaseRecord* phase,
                const BoundaryRecord* boundary) override;
  Status run_started(const RunLedger& ledger) override;
  Status boundary_settled(const RunLedger& ledger, const BoundaryRecord& boundary) override;
  Status verdict(const RunLedger& ledger, const Verdict& verdict) override;
  void phase_gap(const RunLedger& ledger, std::string_view rule, double seconds) override;
  Status run_finished(const RunLedger& ledger,
                      const std::vector<const PhaseRecord*>& closed_phases) override;
  void runs_active(std::size_t count,
                   const std::map<std::uint32_t, std::uint64_t>& by_owner) override;
  Status reservations(const std::vector<Reservation>& rows, std::uint64_t reserved_bytes) override;
  void run_refused(std::string_view cap, std::uint32_t owner_uid) override;
  void admission_decided(const AdmitAsk& ask, const AdmitOutcome& outcome) override;

 private:
  MetricsExporter& exporter_;
};

}  // namespace ramguard
