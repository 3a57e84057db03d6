#pragma once
// The admission desk's history (admission/sources.hpp) from the ledger: the job's peak on
// record, which LedgerQueries::job_peak_on_record keeps cached between admissions. A failed read is
// logged and answered as "none on record": admission then uses the request's own estimate.

#include "admission/sources.hpp"
#include "store/ledger_queries.hpp"

namespace ramguard {

class StoreJobHistory final : public JobHistory {
 public:
  explicit StoreJobHistory(LedgerQueries& ledger) : ledger_(ledger) {}
  std::optional<MeasuredPeak> peak_on_record(const std::string& job,
                                             const std::vector<std::uint32_t>& owners) override;

 private:
  LedgerQueries& ledger_;
};

}  // namespace ramguard
