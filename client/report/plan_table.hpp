#pragma once
// The run's plan against what its phases really held, per phase name over the whole run: the
// planned live sum (overhead + the phase's states), the allocator's allocated bytes at the
// phase's end mark (when the client sent them) and the exact peak, in bytes and model copies.
// The phase with the largest gap between plan and peak is where a plan is wrong.

#include <cstdint>
#include <string>
#include <vector>

#include "ramguard.pb.h"

namespace ramguard::report {

struct PhasePlanRow {
  std::string phase;
  std::uint64_t plan_bytes = 0;       // the largest over the phase's rounds (the same each round)
  std::uint64_t allocated_bytes = 0;  // the largest sent; 0: never sent
  std::uint64_t peak_bytes = 0;       // the largest over the phase's rounds
  bool peak_exact = true;             // every round's peak came from the high-water mark
  double gap_bytes() const {
    return static_cast<double>(peak_bytes) - static_cast<double>(plan_bytes);
  }
};

// One row per phase name, in the order the phases first began; empty when no phase has a plan.
std::vector<PhasePlanRow> phase_plan_rows(const v1::RunStatus& run);

// The row with the largest |peak - plan|, or nullptr when there are no rows.
const PhasePlanRow* largest_plan_gap(const std::vector<PhasePlanRow>& rows);

// The text section ("" when the run has no plan figures).
std::string plan_table_text(const v1::RunStatus& run, bool binary_units);

}  // namespace ramguard::report
