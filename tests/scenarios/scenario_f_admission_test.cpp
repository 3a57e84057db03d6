// Scenario F (README.md): admission. Weights 34 GB, a load that needs 2x, floor 4 GB,
// budget 64 GB (decimal), scaled down 500x: refused with every term of 4 + 68 = 72 > 64; then,
// once a run of the same job has a measured peak of 37 GB on record, admitted with that peak as
// the estimate.
#include <gtest/gtest.h>

#include "scenario_support.hpp"

namespace ramguard::testing {
namespace {

constexpr ScenarioScale gb{500, kGB};

v1::AdmitReply admit(const Daemon& daemon, pid_t pid, bool use_calibrated) {
  v1::Request req;
  auto* a = req.mutable_admit();
  a->set_job("scenario-f");
  a->set_plan("load2x");
  a->mutable_model()->set_model_bytes(gb(34));
  a->set_pid(static_cast<std::uint32_t>(pid));
  a->set_use_calibrated(use_calibrated);
  const v1::Reply reply = daemon.call(req);
  if (reply.has_error()) ADD_FAILURE() << "admit: " << reply.error().message();
  return reply.admit();
}

TEST(ScenarioF, RefusedWithEveryTermThenAdmittedOnTheMeasuredPeak) {
  // The plan says what the scenario says: the load holds two copies of the weights. A factor
  // of 1 makes the calibrated estimate the measured peak itself.
  auto daemon = start_scenario_daemon(gb.thresholds(
      64,
      "admission:\n  calibration_factor: 1\n"
      "plans:\n  load2x:\n    overhead: 0\n    phases:\n      load: { weights: 2 }\n"));
  MemChild child;
  Shaper shaper(child);
  shaper.level(gb(4));

  const v1::AdmitReply refused = admit(*daemon, child.pid(), false);
  SCOPED_TRACE(refused.reason());
  EXPECT_FALSE(refused.admitted());
  EXPECT_TRUE(refused.reservation_id().empty());
  EXPECT_EQ(refused.estimate_source(), "plan:load2x");
  EXPECT_EQ(refused.estimate_bytes(), gb(68));
  EXPECT_NEAR(static_cast<double>(refused.baseline_bytes()), static_cast<double>(gb(4)), 1 << 20);
  EXPECT_EQ(refused.reserved_bytes(), 0u);
  EXPECT_EQ(refused.budget_bytes(), gb(64));
  EXPECT_EQ(refused.margin_bytes(), 0u);
  // 4 + 68 - 64 = 8 GB over (scaled): the headroom is that, negative.
  EXPECT_NEAR(static_cast<double>(refused.headroom_bytes()), -static_cast<double>(gb(8)), 1 << 20);
  // Every term in words too: baseline 8.0 MB + reserved 0 B + estimate 0.14 GB = 0.14 GB >
  // budget 0.13 GB - margin 0 B.
  EXPECT_EQ(refused.reason().rfind("refused: baseline ", 0), 0u);
  for (const char* term : {"+ reserved 0 B", "+ estimate 0.14 GB (plan:load2x)", "> budget 0.13 GB",
                           "- margin 0 B", "headroom -"}) {
    EXPECT_NE(refused.reason().find(term), std::string::npos) << term;
  }
  {
    v1::Request req;
    req.mutable_status();
    EXPECT_EQ(daemon->call(req).status().reservations_size(), 0);  // nothing was reserved
  }

  // A run of the job whose load peaks at 37 GB (scaled) puts a measured peak on record.
  ScenarioRun run(*daemon, child.pid(), ScenarioRun::with("scenario-f", gb(34)));
  // Peaks are of the memory that counts: from the counted part of the begin mark.
  const std::uint64_t from = counted(run.begin("load").reading());
  child.command("spike " + std::to_string(gb(37) - gb(4)) + " 30");
  run.end("load");
  run.finish();
  const std::uint64_t peak = run.status().peak_bytes();
  EXPECT_GE(peak + 512 * 1024, from + gb(33));  // kernel RSS counters are batched
  EXPECT_LT(peak, from + gb(33) + (2u << 20));

  const v1::AdmitReply admitted = admit(*daemon, child.pid(), true);
  SCOPED_TRACE(admitted.reason());
  EXPECT_TRUE(admitted.admitted());
  EXPECT_FALSE(admitted.reservation_id().empty());
  EXPECT_EQ(admitted.estimate_source(), "calibrated:" + run.id());
  EXPECT_EQ(admitted.estimate_bytes(), peak);
  EXPECT_GT(admitted.headroom_bytes(), 0);
  v1::Request req;
  req.mutable_status();
  const v1::StatusReply status = daemon->call(req).status();
  ASSERT_EQ(status.reservations_size(), 1);
  EXPECT_EQ(status.reservations(0).bytes(), peak);
}

}  // namespace
}  // namespace ramguard::testing
