#pragma once
// Rows the store keeps beside the run ledger: downsampled samples, admission reservations,
// run summaries for listings, and a job's peak on record for calibrated estimates.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.hpp"
#include "model/estimate_source.hpp"
#include "model/ledger.hpp"
#include "model/reading.hpp"
#include "model/verdict.hpp"

namespace ramguard {

// One bucket of the downsampled series: the last reading plus the bucket's min and max RSS.
struct StoredSample {
  std::int64_t at_unix_ms = 0;
  std::uint64_t rss_bytes = 0;
  std::uint64_t min_rss_bytes = 0;
  std::uint64_t max_rss_bytes = 0;
  std::uint64_t anon_bytes = 0;
  std::uint64_t file_bytes = 0;
  friend bool operator==(const StoredSample&, const StoredSample&) = default;
};

// An admitted estimate held until its run ends or the lease expires (wall clock: leases must
// survive a daemon restart, where monotonic time of the old process means nothing).
struct StoredReservation {
  std::string id;
  std::string job;
  std::uint64_t bytes = 0;
  std::string run_id;  // empty until a run claims it
  std::int64_t created_wall_ms = 0;
  std::int64_t expires_wall_ms = 0;
  std::uint32_t owner_uid = 0;  // the admitted UID; rows from schema 1 read as root's
  EstimateSource source;        // rows before schema 4 read as given, without a plan
  friend bool operator==(const StoredReservation&, const StoredReservation&) = default;
};

// A run without its marks, phases and boundaries, for `ramguard runs` and comparisons.
struct RunSummary {
  RunInfo info;  // labels included
  RunState state = RunState::kActive;
  Instant started;
  std::optional<Instant> ended;
  MemoryReading baseline;
  MemoryReading last;
  std::uint64_t peak_bytes = 0;
  bool peak_exact = false;
  std::size_t mark_count = 0;
  std::uint32_t rounds = 0;  // the last round whose boundary is recorded
  // Uncleared before cleared, failed before passed, then by severity, then the latest.
  std::optional<Verdict> worst_verdict;
};

// The largest measured peak of a job's recent completed runs, with where it came from.
struct JobPeak {
  std::string run_id;
  std::uint64_t peak_bytes = 0;
  bool peak_exact = false;
  std::uint64_t estimate_bytes = 0;  // what that run was admitted with (0: none)
  std::string plan;
  Instant ended;
};

// One job's ended runs of one owner, summed up: what the exporter's job series start from.
struct JobFacts {
  std::string job;
  std::uint32_t owner_uid = 0;
  std::uint64_t peak_bytes = 0;  // the largest measured peak
  std::uint64_t runs = 0;
};

}  // namespace ramguard
