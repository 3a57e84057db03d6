#include "store/job_history.hpp"

#include "common/log.hpp"

namespace ramguard {

std::optional<MeasuredPeak> StoreJobHistory::peak_on_record(
    const std::string& job, const std::vector<std::uint32_t>& owners) {
  auto peak = ledger_.job_peak_on_record(job, kRecentRunsForPeak, owners);
  if (!peak) {
    log::warning("admission.history", {{"job", job}, {"message", peak.error().message}});
    return std::nullopt;
  }
  if (!*peak) return std::nullopt;
  return MeasuredPeak{(*peak)->run_id, (*peak)->peak_bytes, ""};
}

}  // namespace ramguard
