#pragma once
// The admission rule as arithmetic, and the sentence that states it with every term.
// Pure: Admission calls it under its lock; tests call it directly.

#include <cstdint>
#include <string>

namespace ramguard {

struct AdmissionSum {
  std::uint64_t baseline_bytes = 0;
  std::uint64_t reserved_bytes = 0;  // what is committed: other reservations, runs' holdings
  std::uint64_t estimate_bytes = 0;
  std::uint64_t budget_bytes = 0;  // the effective budget
  std::uint64_t margin_bytes = 0;
};

// What the sentence says beyond the sums (all empty: the plain rule of bare reservations).
struct ReasonDetail {
  // Empty: the committed term is plain reservations ("reserved X"). Else it is written
  // "committed X (<detail>)", e.g. "run r-1 holds 2.02 GB, reserved 0.20 GB: counted 2.02 GB".
  std::string committed_detail;
  std::string budget_cap;  // empty or "budget": the configured one; else "node" or "cgroup"
  std::string caps;        // appended: every cap with its terms; empty without measured caps
};

struct AdmissionOutcome {
  bool fits = false;              // baseline + reserved + estimate <= budget - margin, estimate > 0
  std::uint64_t total_bytes = 0;  // saturates at 2^64-1 rather than wrapping
  std::uint64_t limit_bytes = 0;  // budget - margin, 0 when the margin exceeds the budget
  std::int64_t headroom_bytes = 0;  // limit - total, clamped to the int64 range
};

AdmissionOutcome evaluate(const AdmissionSum& sum);

// "refused: baseline 4.00 GB + reserved 0 B + estimate 68.00 GB (plan:load2x) = 72.00 GB >
//  budget 64.00 GB - margin 0 B; headroom -8.00 GB"
std::string admission_reason(const AdmissionSum& sum, const AdmissionOutcome& outcome,
                             const std::string& estimate_source, const ReasonDetail& detail = {});

}  // namespace ramguard
