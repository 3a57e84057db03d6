#pragma once
// The per-target families: names, help and types of the series that carry ramguard_job (and
// run_id for a run or watched PID). They are many (about a dozen per watched process, a
// thousand processes on a busy node), so they are kept and written by TargetSeries rather than
// as prometheus-cpp metrics, whose per-scrape copy and stream formatting cost ten times more
// than the sampling they report. Global families stay in prometheus-cpp (families.hpp).

#include <array>
#include <cstddef>
#include <cstdint>

namespace ramguard {

enum class TargetFamily : std::uint8_t {
  // Per watched target (labels ramguard_job, run_id).
  kRssBytes,
  kMemoryBytes,  // + kind: anon, file, shmem, kernel (cgroup scope)
  kSwapBytes,
  kCountedBytes,
  kPeakBytes,
  kPeakExact,
  kUp,
  kExited,
  kDegraded,  // + reason
  kLastReadingTimestampSeconds,
  kReadSeconds,
  kSlowReadsTotal,
  kPssReadSeconds,  // tree scope, after its first round end
  // Per run: phases, round boundaries, gaps between marks.
  kPhasePeakBytes,        // + phase
  kPhaseDurationSeconds,  // + phase
  kBoundaryRssBytes,
  kBoundaryFloorBytes,
  kBoundaryCountedFloorBytes,
  kScopeInfo,  // + scope
  kBoundaryAllocatorLiveBytes,
  kBoundaryAllocatorFreeBytes,
  kBoundaryRound,
  kPhaseGapSeconds,  // + gap
  // Per job (ramguard_job only): admissions. Per run: verdicts.
  kAdmissionsTotal,  // + decision
  kAdmissionHeadroomBytes,
  kVerdictsTotal,  // + kind, severity
  kVerdictActive,  // + kind
  // Per job (ramguard_job only) + uid of the runs' owner: the calibrated facts of its ended
  // runs, which every node exports so the fleet's Prometheus holds each job's history (fleet/).
  kJobPeakBytes,
  kJobPeakEstimateRatio,
  kJobRuns,
};

inline constexpr std::size_t kTargetFamilyCount =
    static_cast<std::size_t>(TargetFamily::kJobRuns) + 1;

struct TargetFamilyInfo {
  const char* name;
  const char* help;
  bool counter;  // TYPE counter; otherwise gauge
};

const TargetFamilyInfo& info(TargetFamily family);

}  // namespace ramguard
