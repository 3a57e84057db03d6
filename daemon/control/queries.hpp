#pragma once
// Read-only questions about runs, answered from memory first and the ledger database second:
// reports, comparisons and listings.

#include <string>

#include "ramguard.pb.h"
#include "ramguard/base/result.hpp"
#include "runs/run_registry.hpp"
#include "store/store.hpp"

namespace ramguard::control {

// The ledger of a run in memory (active or recently ended) or in the store. complete: a run in
// memory that no longer holds its oldest marks and boundaries gets them back from the store
// (reports and comparisons); otherwise it is what memory holds (status).
Result<RunLedger> find_ledger(const RunRegistry& registry, Store* store, const std::string& run_id,
                              bool complete = false);

// The measured intervals of the configured phase gaps, the newest `max_gaps` of them.
void add_gaps(const RunLedger& ledger, const DetectorParams& params, v1::RunStatus& out,
              std::size_t max_gaps = SIZE_MAX);

void fill_report(const RunRegistry& registry, Store* store, const RunLedger& ledger,
                 bool include_samples, v1::ReportReply& out);

// One row of the comparison table (peak, floors between rounds, RSS after completion).
void fill_compare_row(const RunLedger& ledger, const DetectorParams& params, v1::CompareRow& out);
// The run's censuses: the ledger database's (all of them), else what the run holds in memory.
std::vector<CensusRecord> run_censuses(Store* store, const RunLedger& ledger);
// A compare row's top holder: the largest group of the run's last census.
void add_top_holder(const std::vector<CensusRecord>& censuses, v1::CompareRow& out);

}  // namespace ramguard::control
