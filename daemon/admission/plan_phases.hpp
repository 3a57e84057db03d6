#pragma once
// A phase name the run's plan does not list is most often a typo ("trainig"): the phase is then
// judged against the whole plan's estimate instead of its own, and the per-phase figures go
// under a name nobody looks for. The coordinator is told at the phase's first begin mark, as a
// warning beside the reply, never a refusal (free-form phase names stay legal).

#include <string>
#include <string_view>

#include "model/plan.hpp"

namespace ramguard {

// Empty when `plan` lists `phase`; otherwise one sentence naming the plan, its phases and the
// nearest of them when the name looks like a misspelling.
std::string unplanned_phase_warning(const MemoryPlan& plan, std::string_view phase);

}  // namespace ramguard
