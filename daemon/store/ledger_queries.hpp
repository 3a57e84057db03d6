#pragma once
// The ledger's reads: whole runs and their records one at a time, listings across runs, a
// job's peak on record, reservations and censuses. Each row is read by column name
// (SqliteDb::for_each_row). Used on the daemon's loop through Store and on the StoreReader's
// thread with a read-only connection of its own; not thread-safe, like its connection.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/ledger.hpp"
#include "model/verdict.hpp"
#include "ramguard/base/result.hpp"
#include "store/records.hpp"

namespace ramguard {

class SqliteDb;

// Jobs whose peak on record is kept in memory between admissions.
inline constexpr std::size_t kMaxCachedJobPeaks = 256;
// How many of a job's most recent completed runs job_peak_on_record looks at.
inline constexpr std::size_t kRecentRunsForPeak = 10;

// True for the error load_run and the write methods give for a run id not in the ledger.
bool is_unknown_run(const Error& error);
// That error, for `run_id` in the ledger at `file`.
Error unknown_run(const std::string& run_id, const std::filesystem::path& file);

class LedgerQueries {
 public:
  // `schema_version`: the file's, which may be older than this build's on a read-only ledger.
  LedgerQueries(SqliteDb& db, std::int64_t schema_version)
      : db_(db), schema_version_(schema_version) {}
  LedgerQueries(const LedgerQueries&) = delete;
  LedgerQueries& operator=(const LedgerQueries&) = delete;

  // ---- one run ----
  // Marks by seq, phases and verdicts in the order first saved, boundaries by round.
  // An unknown id is an error starting with "unknown run id" (see is_unknown_run).
  Result<RunLedger> load_run(const std::string& run_id);
  // A run's records, one at a time, oldest first (as load_run orders them), so a reader holds
  // no more of them than it keeps. stream_marks: only the newest `newest` when given.
  Result<std::uint64_t> mark_count(const std::string& run_id);
  Status stream_marks(const std::string& run_id, std::optional<std::uint64_t> newest,
                      const std::function<void(MarkRecord)>& take);
  Status stream_phases(const std::string& run_id, const std::function<void(PhaseRecord)>& take);
  Status stream_boundaries(const std::string& run_id,
                           const std::function<void(BoundaryRecord)>& take);
  Status stream_verdicts(const std::string& run_id, std::optional<std::int64_t> only_id,
                         const std::function<void(Verdict)>& take);
  Result<std::vector<ProgressSample>> load_samples(const std::string& run_id);  // by time
  // The run's censuses, oldest first; empty before schema 5.
  Result<std::vector<CensusRecord>> load_censuses(const std::string& run_id);
  // Ok when the run is in the ledger, else the unknown_run error.
  Status require_run(const std::string& run_id, const char* operation);

  // ---- restart recovery (Store::for_each_active_run) ----
  // The runs rows of runs in state active, oldest first, without labels and records; a row
  // that cannot be decoded goes to `undecodable` as (run id, reason).
  Status active_run_heads(std::vector<RunLedger>& heads,
                          std::vector<std::pair<std::string, std::string>>& undecodable);
  Status load_head_details(RunInfo& info);  // labels and scope
  Status load_details(RunLedger& ledger);   // the head's details and every record

  // ---- across runs ----
  Result<std::vector<RunSummary>> list_runs(std::size_t limit);  // most recent start first
  // Runs carrying every given label (key=value); most recent first. An empty map lists all.
  Result<std::vector<RunSummary>> find_runs_by_labels(
      const std::map<std::string, std::string>& labels, std::size_t limit = 1000);
  // The largest measured peak among the job's `recent_runs` most recently ended runs (state
  // ended, peak > 0; exited and lost runs stopped early and would under-estimate). nullopt when
  // the job has none.
  // `owners` non-empty: only runs owned by one of those UIDs count (a user's tiny run under
  // another user's job name must not calibrate that user's admissions); empty: every run.
  Result<std::optional<JobPeak>> job_peak_on_record(const std::string& job,
                                                    std::size_t recent_runs = kRecentRunsForPeak,
                                                    const std::vector<std::uint32_t>& owners = {});
  // job_peak_on_record's answers change when a run ends or runs are pruned: the writer says so.
  void forget_job_peaks() { job_peaks_.clear(); }
  // Per job and owner, the ended runs with a peak (as job_peak_on_record counts them): the
  // largest peak and how many; the `limit` most recently ended pairs first.
  Result<std::vector<JobFacts>> job_facts(std::size_t limit);
  Result<std::vector<Reservation>> load_reservations();  // oldest first
  // Runs in the ledger (active ones included) and how many of them have finished.
  Result<std::size_t> run_count();
  Result<std::size_t> finished_run_count();
  // Bytes of the file's pages in use (pages freed by pruning are reused before it grows).
  Result<std::uint64_t> used_bytes();

 private:
  Result<std::vector<RunSummary>> summaries(const std::string& where_sql,
                                            const std::vector<std::string>& params,
                                            std::size_t limit);
  Status load_labels(RunInfo& info);
  Status load_scope(RunInfo& info);  // the run_scopes row, if any (schema 3+)
  Result<std::vector<Verdict>> load_verdicts(const std::string& run_id,
                                             std::optional<std::int64_t> only_id);

  SqliteDb& db_;
  std::int64_t schema_version_;
  // job_peak_on_record's answers for the default window, asked at every admission.
  std::map<std::string, std::optional<JobPeak>, std::less<>> job_peaks_;
};

}  // namespace ramguard
