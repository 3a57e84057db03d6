#pragma once
// What the store reads back besides runs, samples and reservations (those are the model's
// ProgressSample and Reservation): run summaries for listings, and a job's peak on record
// for calibrated estimates.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/clock.hpp"
#include "model/estimate_source.hpp"
#include "model/ledger.hpp"
#include "model/progress_sample.hpp"
#include "model/reading.hpp"
#include "model/reservation.hpp"
#include "model/verdict.hpp"

namespace ramguard {

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
