#pragma once
// Read-only questions about runs, answered from memory first and the ledger database second:
// reports, comparisons and listings.

#include <map>
#include <optional>
#include <string>
#include <vector>

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
// A run in memory: its sample series into the report.
void add_held_samples(const RunMachine& run, v1::ReportReply& out);

// One row of the comparison table (peak, floors between rounds, RSS after completion).
void fill_compare_row(const RunLedger& ledger, const DetectorParams& params, v1::CompareRow& out);
// The run's censuses: the ledger database's (all of them), else what the run holds in memory.
std::vector<CensusRecord> run_censuses(Store* store, const RunLedger& ledger);
// A compare row's top holder: the largest group of the run's last census.
void add_top_holder(const std::vector<CensusRecord>& censuses, v1::CompareRow& out);

// ---- reads off the event loop (store/store_reader.hpp) ----
// A report or a comparison of a run the ledger must complete (not in memory, or in memory
// without its oldest marks) reads on the reader's thread: prepared on the loop, read there,
// and the reply's parts built there too, so the loop only checks access and moves them in.
struct StoredRead {
  // Prepared on the loop:
  std::optional<RunLedger> held;  // a copy of the run in memory, completed from the store
  bool samples = false;           // a report of a run not in memory: its stored samples too
  // Read on the thread:
  Status status = ok_status();
  RunInfo info;            // for the access check
  v1::ReportReply report;  // a report: the run, its gaps and any stored samples
  v1::CompareRow row;      // a comparison
};
struct StoredReads {
  bool compare = false;
  std::map<std::string, StoredRead> runs;  // by run id
};

// What `request` (a report or a comparison) needs read from the store, or nullopt when memory
// answers alone (or the request is malformed: the handler says so). Label queries run here.
std::optional<StoredReads> plan_stored_reads(const RunRegistry& registry, Store* store,
                                             const v1::Request& request);
// On the reader's thread: `reads` filled from `ledger` (a reading connection).
void read_stored(LedgerQueries& ledger, const DetectorParams& params, StoredReads& reads);

}  // namespace ramguard::control
