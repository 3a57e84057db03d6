#include "admission/plan_phases.hpp"

#include <algorithm>
#include <vector>

#include "ramguard/base/closest_word.hpp"

namespace ramguard {

std::string unplanned_phase_warning(const MemoryPlan& plan, std::string_view phase) {
  std::vector<std::string_view> names;
  for (const PlanPhase& p : plan.phases) {
    if (p.phase == phase) return {};
    names.push_back(p.phase);
  }
  std::string listed;
  for (std::string_view name : names) {
    listed += (listed.empty() ? "" : ", ") + std::string(name);
  }
  std::string text = "phase '" + std::string(phase) + "' is not in plan " + plan.name +
                     " (its phases: " + (listed.empty() ? "none" : listed) + ")";
  if (std::string_view near = closest_word(phase, names); !near.empty()) {
    text += "; did you mean '" + std::string(near) + "'?";
  }
  return text + " It is judged against the plan's largest phase.";
}

}  // namespace ramguard
