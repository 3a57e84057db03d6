#include "report/plan_table.hpp"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "report/render.hpp"

namespace ramguard::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// A run of a 1 GB model: two rounds of aggregation and synchronization under a plan.
v1::RunStatus planned_run() {
  v1::RunStatus run;
  run.set_run_id("r-plan");
  run.set_model_bytes(1'000'000'000);
  auto add = [&](const char* phase, std::uint32_t round, std::uint64_t plan, std::uint64_t alloc,
                 std::uint64_t peak) {
    v1::PhaseStat* p = run.add_phases();
    p->set_phase(phase);
    p->set_round(round);
    p->set_plan_bytes(plan);
    p->set_allocated_bytes(alloc);
    p->set_peak_bytes(peak);
    p->set_peak_exact(true);
  };
  add("aggregation", 1, 4'300'000'000, 1'100'000'000, 4'150'000'000);
  add("synchronization", 1, 3'300'000'000, 0, 3'900'000'000);
  add("aggregation", 2, 4'300'000'000, 1'200'000'000, 4'250'000'000);
  add("synchronization", 2, 3'300'000'000, 0, 4'100'000'000);
  return run;
}

TEST(PlanTable, OneRowPerPhaseNameWithTheLargestFiguresOverTheRounds) {
  const auto rows = phase_plan_rows(planned_run());
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].phase, "aggregation");
  EXPECT_EQ(rows[0].plan_bytes, 4'300'000'000u);
  EXPECT_EQ(rows[0].allocated_bytes, 1'200'000'000u);
  EXPECT_EQ(rows[0].peak_bytes, 4'250'000'000u);
  EXPECT_EQ(rows[1].phase, "synchronization");
  EXPECT_EQ(rows[1].allocated_bytes, 0u);
  EXPECT_EQ(rows[1].peak_bytes, 4'100'000'000u);
  const PhasePlanRow* gap = largest_plan_gap(rows);
  ASSERT_NE(gap, nullptr);
  EXPECT_EQ(gap->phase, "synchronization");  // 0.8 GB above the plan, against 0.05 GB below
  EXPECT_DOUBLE_EQ(gap->gap_bytes(), 800'000'000.0);
}

TEST(PlanTable, TextShowsBytesAndCopiesSideBySideAndNamesTheLargestGap) {
  v1::ReportReply reply;
  *reply.mutable_run() = planned_run();
  const std::string text = report_text(reply, {});
  EXPECT_THAT(text, HasSubstr("Plan against peaks, per phase over the run"));
  EXPECT_THAT(text, HasSubstr("4.30 GB (4.30)"));    // planned aggregation, copies
  EXPECT_THAT(text, HasSubstr("1.20 GB (1.20)"));    // allocated at its end
  EXPECT_THAT(text, HasSubstr("4.25 GB (4.25)"));    // exact peak
  EXPECT_THAT(text, HasSubstr("-50.0 MB (-0.05)"));  // peak - plan
  EXPECT_THAT(text, HasSubstr("+0.80 GB (+0.80)"));
  EXPECT_THAT(text,
              HasSubstr("Largest gap: synchronization, exact peak 4.10 GB is 0.80 GB (0.80 model "
                        "copies) ABOVE the plan's 3.30 GB."));
}

TEST(PlanTable, NoPlanNoSection) {
  v1::RunStatus run = planned_run();
  for (auto& p : *run.mutable_phases()) p.set_plan_bytes(0);
  EXPECT_TRUE(phase_plan_rows(run).empty());
  EXPECT_EQ(plan_table_text(run, false), "");
  v1::ReportReply reply;
  *reply.mutable_run() = run;
  EXPECT_THAT(report_text(reply, {}), Not(HasSubstr("Plan against peaks")));
}

TEST(PlanTable, WithoutAModelSizeOnlyBytes) {
  v1::RunStatus run = planned_run();
  run.set_model_bytes(0);
  const std::string text = plan_table_text(run, false);
  EXPECT_THAT(text, HasSubstr("4.30 GB"));
  EXPECT_THAT(text, Not(HasSubstr("(4.30)")));
  EXPECT_THAT(text, Not(HasSubstr("model copies")));
}

}  // namespace
}  // namespace ramguard::report
