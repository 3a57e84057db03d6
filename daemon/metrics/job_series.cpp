#include "metrics/job_series.hpp"

#include <algorithm>
#include <string>

#include "admission/admission.hpp"
#include "metrics/job_label.hpp"
#include "metrics/target_table.hpp"
#include "model/ledger.hpp"

namespace ramguard {

JobSeries::JobSeries(TargetTable& table) : table_(table), series_(table.series()) {}

TargetState& JobSeries::job_state(std::string_view job, std::uint32_t owner_uid) {
  return table_.entry(TargetTable::job_key(job), {{kJobLabel, job_label(job, table_.job_names())}},
                      owner_uid);
}

void JobSeries::observe_admission(std::string_view job, std::uint32_t owner_uid,
                                  const Decision& decision) {
  TargetState& t = job_state(job, owner_uid);
  series_.revive(t);
  series_.metric(t, TargetFamily::kAdmissionsTotal,
                 {{"decision", decision.admitted ? "admitted" : "refused"}}) += 1;
  series_.metric(t, TargetFamily::kAdmissionHeadroomBytes) =
      static_cast<double>(decision.headroom_bytes);
}

void JobSeries::observe_run(const RunLedger& ledger) {
  if (ledger.state != RunState::kEnded || ledger.peak_bytes == 0) return;
  TargetState& t = job_state(ledger.info.job, ledger.info.owner_uid);
  series_.revive(t);
  add_runs(t, ledger.info.owner_uid, ledger.peak_bytes, 1, ledger.info.estimate_bytes);
}

void JobSeries::seed(std::string_view job, std::uint32_t owner_uid, std::uint64_t peak_bytes,
                     std::uint64_t runs, Instant now) {
  add_runs(job_state(job, owner_uid), owner_uid, peak_bytes, runs, 0);
  series_.retire(TargetTable::job_key(job), now.monotonic);
}

void JobSeries::add_runs(TargetState& t, std::uint32_t owner_uid, std::uint64_t peak_bytes,
                         std::uint64_t runs, std::uint64_t estimate_bytes) {
  const Labels uid = {{"uid", series_.bounded_value(t, "uid", std::to_string(owner_uid))}};
  double& peak = series_.metric(t, TargetFamily::kJobPeakBytes, uid);
  peak = std::max(peak, static_cast<double>(peak_bytes));
  series_.metric(t, TargetFamily::kJobRuns, uid) += static_cast<double>(runs);
  if (estimate_bytes > 0) {
    series_.metric(t, TargetFamily::kJobPeakEstimateRatio, uid) =
        static_cast<double>(peak_bytes) / static_cast<double>(estimate_bytes);
  }
}

}  // namespace ramguard
