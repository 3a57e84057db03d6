// The warning for a phase name the run's plan does not list.
#include "admission/plan_phases.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ramguard {
namespace {

using ::testing::HasSubstr;

MemoryPlan two_phases() {
  MemoryPlan plan;
  plan.name = "fedavg";
  plan.phases = {{"load", {{"global", 1, false}}}, {"training", {{"global", 2, false}}}};
  return plan;
}

TEST(PlanPhases, AListedPhaseHasNoWarning) {
  EXPECT_EQ(unplanned_phase_warning(two_phases(), "training"), "");
  EXPECT_EQ(unplanned_phase_warning(two_phases(), "load"), "");
}

TEST(PlanPhases, AMisspeltPhaseNamesThePlanItsPhasesAndTheNearest) {
  EXPECT_EQ(unplanned_phase_warning(two_phases(), "trainig"),
            "phase 'trainig' is not in plan fedavg (its phases: load, training); did you mean "
            "'training'? It is judged against the plan's largest phase.");
}

TEST(PlanPhases, AFreeFormPhaseGetsNoGuess) {
  const std::string w = unplanned_phase_warning(two_phases(), "evaluate");
  EXPECT_THAT(w, HasSubstr("phase 'evaluate' is not in plan fedavg"));
  EXPECT_THAT(w, ::testing::Not(HasSubstr("did you mean")));
}

}  // namespace
}  // namespace ramguard
