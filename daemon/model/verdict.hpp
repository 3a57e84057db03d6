#pragma once
// A verdict: what ramguard concludes about a run, with the numbers that justify it.

#include <cstdint>
#include <map>
#include <string>

#include "common/clock.hpp"

namespace ramguard {

enum class Severity { kInfo, kWarning, kCritical };

// Kinds, as written in metrics, the ledger and the protocol.
namespace verdict_kind {
inline constexpr const char* kGrowthWarning = "growth_warning";
inline constexpr const char* kLeak = "leak";
inline constexpr const char* kPlateau = "plateau";
inline constexpr const char* kGrowthClass = "growth_class";
inline constexpr const char* kRunaway = "runaway";
inline constexpr const char* kRelease = "release";
inline constexpr const char* kOverBudget = "over_budget";
inline constexpr const char* kHeadroom = "headroom";
inline constexpr const char* kPhaseGap = "phase_gap";
inline constexpr const char* kEstimateAccuracy = "estimate_accuracy";
inline constexpr const char* kExited = "exited";
inline constexpr const char* kLost = "lost";
inline constexpr const char* kFailed = "failed";  // the coordinator ended the run on a failure
// The kernel's OOM killer killed processes in a cgroup-scope run's cgroup (workers, say).
inline constexpr const char* kOomKill = "oom_kill";
}  // namespace verdict_kind

struct Verdict {
  std::string kind;
  Severity severity = Severity::kInfo;
  bool passed = true;       // pass/fail verdicts (release); warnings set it false
  std::uint32_t round = 0;  // 0: not tied to a round
  std::string phase;
  std::string summary;                    // one sentence with the numbers, decimal GB
  std::map<std::string, double> figures;  // base units: bytes, seconds, copies, rounds
  Instant at;
  bool cleared = false;  // an earlier warning of this kind no longer holds
  // A standing warning restated with this round's figures (growth that goes on): stored and
  // delivered like any verdict, not logged again.
  bool update = false;
};

inline const char* severity_name(Severity s) {
  switch (s) {
    case Severity::kInfo:
      return "info";
    case Severity::kWarning:
      return "warning";
    case Severity::kCritical:
      return "critical";
  }
  return "info";
}

}  // namespace ramguard
