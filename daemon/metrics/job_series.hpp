#pragma once
// Each job's series (label ramguard_job only): its admissions and headroom, and its history on
// this node: the largest peak of its ended runs, their count and their peak-to-estimate ratio
// (per owner, label uid, bounded like any label value). They are kept in the TargetTable
// under TargetTable::job_key(job), so they count against metrics.max_targets, retire with the
// job's runs and come back with its next admission or run. Not thread-safe: the exporter
// hands it out under its lock.

#include <cstdint>
#include <string_view>

#include "common/clock.hpp"

namespace ramguard {

struct Decision;
struct RunLedger;
struct TargetState;
class TargetSeries;
class TargetTable;

class JobSeries {
 public:
  explicit JobSeries(TargetTable& table);
  JobSeries(const JobSeries&) = delete;
  JobSeries& operator=(const JobSeries&) = delete;

  // An admission of `job` asked by `owner_uid` (a job's series count against its first
  // asker's cap): admitted or refused, with its headroom (negative when refused).
  void observe_admission(std::string_view job, std::uint32_t owner_uid, const Decision& decision);
  // A run finished. As the ledger's calibration counts them, only an ended run with a peak
  // adds to its job's history (an exited or lost run stopped early and would under-estimate);
  // a run that claimed no reservation (estimate 0) has no ratio.
  void observe_run(const RunLedger& ledger);
  // At start, from the ledger: the job's peak and runs counted so far (no ratio), retired at
  // `now` like a finished run's series, so they are scraped for the retention period and give
  // way first when targets are many; the job's next run revives them.
  void seed(std::string_view job, std::uint32_t owner_uid, std::uint64_t peak_bytes,
            std::uint64_t runs, Instant now);

 private:
  TargetState& job_state(std::string_view job, std::uint32_t owner_uid);
  // Adds `runs` runs with this peak to the owner's history of the job.
  void add_runs(TargetState& state, std::uint32_t owner_uid, std::uint64_t peak_bytes,
                std::uint64_t runs, std::uint64_t estimate_bytes);

  TargetTable& table_;
  TargetSeries& series_;  // the table's
};

}  // namespace ramguard
