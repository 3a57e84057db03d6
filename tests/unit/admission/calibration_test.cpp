// Calibrated estimates and the choice of a Load's estimate, including scenario F end to end
// through Admission (weights 34 GB loaded twice, floor 4 GB, budget 64 GB).
#include "admission/calibration.hpp"

#include <gtest/gtest.h>

#include <limits>

#include "admission/admission.hpp"

namespace ramguard {
namespace {

constexpr std::uint64_t kGB = 1'000'000'000;

TEST(Calibration, FactorAppliesAndRoundsUp) {
  Result<std::uint64_t> e = calibrated_estimate(37 * kGB);
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(*e, 40'700'000'000u);
  Result<std::uint64_t> exact = calibrated_estimate(10, 1.0);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(*exact, 10u);
  Result<std::uint64_t> up = calibrated_estimate(3, 1.1);
  ASSERT_TRUE(up.ok());
  EXPECT_EQ(*up, 4u);  // 3.3 rounds up: never below the measurement
}

TEST(Calibration, Errors) {
  EXPECT_FALSE(calibrated_estimate(0).ok());
  Result<std::uint64_t> low = calibrated_estimate(kGB, 0.9);
  ASSERT_FALSE(low.ok());
  EXPECT_NE(low.error().message.find("between 1 and 10, got 0.9"), std::string::npos);
  EXPECT_FALSE(calibrated_estimate(kGB, 11).ok());
  EXPECT_FALSE(calibrated_estimate(std::numeric_limits<std::uint64_t>::max(), 2).ok());
}

MemoryPlan load_twice() {
  return MemoryPlan{"load2x", {{"load", {{"weights", 2, false}}}}, 0};
}

TEST(ChooseEstimate, PreferenceOrder) {
  Result<Estimate> plan = estimate_from_plan(load_twice(), 34 * kGB, 1);
  ASSERT_TRUE(plan.ok());
  const MeasuredPeak peak{"run-7", 37 * kGB, ""};

  EstimateInputs in;
  in.given_bytes = 20 * kGB;
  in.plan_estimate = *plan;
  in.peak_on_record = peak;
  Result<EstimateChoice> given = choose_estimate(in);
  ASSERT_TRUE(given.ok());
  EXPECT_EQ(given->source.text(), "given");
  EXPECT_EQ(given->bytes, 20 * kGB);

  in.given_bytes.reset();
  Result<EstimateChoice> from_plan = choose_estimate(in);
  ASSERT_TRUE(from_plan.ok());
  EXPECT_EQ(from_plan->source.text(), "plan:load2x");
  EXPECT_EQ(from_plan->bytes, 68 * kGB);
  EXPECT_NE(from_plan->detail.find("weights 2 x 34.00 GB"), std::string::npos) << from_plan->detail;

  in.use_calibrated = true;  // the measurement replaces the plan ...
  Result<EstimateChoice> calibrated = choose_estimate(in);
  ASSERT_TRUE(calibrated.ok());
  EXPECT_EQ(calibrated->source.text(), "calibrated:run-7");
  EXPECT_EQ(calibrated->source.plan, "load2x");  // the plan's phases stay the run's yardstick
  EXPECT_EQ(calibrated->bytes, 40'700'000'000u);
  EXPECT_EQ(calibrated->detail,
            "measured peak 37.00 GB of run run-7 x 1.10 = 40.70 GB, below the plan's 68.00 GB "
            "(plan load2x): the measured peak is the better evidence");
  in.given_bytes = 20 * kGB;  // ... and a given estimate
  EXPECT_EQ(choose_estimate(in)->source.text(), "calibrated:run-7");

  EstimateInputs only_peak;
  only_peak.peak_on_record = peak;
  EXPECT_EQ(choose_estimate(only_peak)->source.text(), "calibrated:run-7");  // last resort
  EXPECT_EQ(choose_estimate(only_peak)->source.plan, "");
}

TEST(ChooseEstimate, Errors) {
  EstimateInputs nothing;
  Result<EstimateChoice> none = choose_estimate(nothing);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("no estimate"), std::string::npos);

  nothing.use_calibrated = true;
  Result<EstimateChoice> no_peak = choose_estimate(nothing);
  ASSERT_FALSE(no_peak.ok());
  EXPECT_NE(no_peak.error().message.find("no measured peak on record"), std::string::npos);

  EstimateInputs zero;
  zero.given_bytes = 0;
  EXPECT_FALSE(choose_estimate(zero).ok());

  EstimateInputs bad_factor;
  bad_factor.peak_on_record = MeasuredPeak{"run-1", kGB, ""};
  bad_factor.use_calibrated = true;
  bad_factor.factor = 0.5;
  Result<EstimateChoice> r = choose_estimate(bad_factor);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("run run-1"), std::string::npos);
}

// Scenario F: refused with every term, then admitted once the measured peak is the estimate.
TEST(ScenarioF, RefusedFromPlanAdmittedWhenCalibrated) {
  FakeClock clock;
  Admission admission(64 * kGB, 0, std::chrono::seconds(60), clock);
  Result<Estimate> plan = estimate_from_plan(load_twice(), 34 * kGB, 1);
  ASSERT_TRUE(plan.ok());

  EstimateInputs in;
  in.plan_estimate = *plan;
  in.use_calibrated = true;  // requested, but nothing on record yet: the plan decides
  Result<EstimateChoice> first = choose_estimate(in);
  ASSERT_TRUE(first.ok());
  const Decision refused = admission.admit({"vit", first->bytes, first->source, 4 * kGB});
  EXPECT_FALSE(refused.admitted);
  EXPECT_TRUE(refused.reservation_id.empty());
  EXPECT_EQ(refused.baseline_bytes, 4 * kGB);
  EXPECT_EQ(refused.reserved_bytes, 0u);
  EXPECT_EQ(refused.estimate_bytes, 68 * kGB);
  EXPECT_EQ(refused.budget_bytes, 64 * kGB);
  EXPECT_EQ(refused.margin_bytes, 0u);
  EXPECT_EQ(refused.headroom_bytes, -8 * static_cast<std::int64_t>(kGB));
  EXPECT_EQ(refused.reason,
            "refused: baseline 4.00 GB + reserved 0 B + estimate 68.00 GB (plan:load2x) = "
            "72.00 GB > budget 64.00 GB - margin 0 B; headroom -8.00 GB");
  EXPECT_EQ(admission.reserved_bytes(), 0u);

  in.peak_on_record = MeasuredPeak{"run-37", 37 * kGB, ""};
  Result<EstimateChoice> second = choose_estimate(in);
  ASSERT_TRUE(second.ok());
  const Decision admitted = admission.admit({"vit", second->bytes, second->source, 4 * kGB});
  EXPECT_TRUE(admitted.admitted) << admitted.reason;
  EXPECT_EQ(admitted.estimate_bytes, 40'700'000'000u);
  EXPECT_EQ(admitted.headroom_bytes, 19'300'000'000);
  EXPECT_EQ(admitted.estimate_source.text(), "calibrated:run-37");
  EXPECT_EQ(admitted.reason,
            "admitted: baseline 4.00 GB + reserved 0 B + estimate 40.70 GB (calibrated:run-37) = "
            "44.70 GB <= budget 64.00 GB - margin 0 B; headroom 19.30 GB");
  EXPECT_EQ(admission.reserved_bytes(), 40'700'000'000u);
}

}  // namespace
}  // namespace ramguard
